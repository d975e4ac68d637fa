import sys

from content_builder.cli import main

sys.exit(main())
