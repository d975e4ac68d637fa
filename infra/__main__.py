"""The Pulumi program (Pulumi.yaml: `main: infra/`): config at the top, exports at the bottom."""

from __future__ import annotations

import pulumi

from infra import config as stack_config
from infra.program import define

site = define(stack_config.load())

pulumi.export("base_url", site.base_url)
pulumi.export("distribution_id", site.distribution_id)
pulumi.export("bucket_name", site.bucket_name)
pulumi.export("files", site.files)
# What the last publish uploaded, deleted and invalidated (and the invalidation's id).
pulumi.export("last_publish", site.last_publish)
