import sys

from agent_access.cli import main

sys.exit(main())
