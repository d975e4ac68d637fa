"""The Pulumi program (Pulumi.yaml: `main: infra/`): config at the top, exports at the bottom."""

from __future__ import annotations

import pulumi

from infra import config as stack_config
from infra.program import define

site = define(stack_config.load())

pulumi.export("base_url", site.base_url)
pulumi.export("distribution_id", site.distribution_id)
pulumi.export("bucket_name", site.bucket_name)
# Small at any site size: the per-file list lives in the SiteContent resource's state
# (`pulumi stack export`), not in outputs a CI step has to carry.
pulumi.export("file_count", site.file_count)
pulumi.export("files_digest", site.files_digest)
# How many files the last publish uploaded, deleted and invalidated, and the
# invalidation's id (the deploy job waits for it).
pulumi.export("last_publish", site.publish_summary)
pulumi.export("invalidation_id", site.publish_summary.apply(lambda s: s["invalidation_id"]))
