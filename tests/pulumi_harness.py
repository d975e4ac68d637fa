"""Run the Pulumi program under `pulumi.runtime.set_mocks` and record every resource.

Mock outputs are what AWS would compute (ARNs, domain names); inputs are recorded as
the engine receives them (camelCase keys, nested Args serialized to dicts).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import dill
import pulumi

from infra.config import SiteConfig
from infra.program import define
from infra.site import AgentSite

DISTRIBUTION_DOMAIN = "d111111abcdef8.cloudfront.net"
DISTRIBUTION_ID = "E2MOCKDISTRIB"
ACCOUNT = "123456789012"
FUNCTION_URL = "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/"


@dataclass(frozen=True)
class Registered:
    typ: str
    name: str
    inputs: dict[str, Any]
    provider: str | None
    id: str


@dataclass
class RecordingMocks(pulumi.runtime.Mocks):
    resources: list[Registered] = field(default_factory=list)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        outputs = dict(args.inputs)
        resource_id = f"{args.name}-id"
        if args.typ == "aws:s3/bucket:Bucket":
            bucket = f"{args.name}-0a1b2c3"
            resource_id = bucket
            outputs.update(
                bucket=bucket,
                arn=f"arn:aws:s3:::{bucket}",
                bucketRegionalDomainName=f"{bucket}.s3.eu-west-1.amazonaws.com",
            )
        elif args.typ == "aws:cloudfront/distribution:Distribution":
            resource_id = DISTRIBUTION_ID
            outputs.update(
                arn=f"arn:aws:cloudfront::{ACCOUNT}:distribution/{DISTRIBUTION_ID}",
                domainName=DISTRIBUTION_DOMAIN,
                hostedZoneId="Z2FDTNDATAQYW2",
            )
        elif args.typ == "aws:acm/certificate:Certificate":
            outputs.update(
                arn=f"arn:aws:acm:us-east-1:{ACCOUNT}:certificate/mock",
                domainValidationOptions=[
                    {
                        "domainName": args.inputs["domainName"],
                        "resourceRecordName": f"_x1.{args.inputs['domainName']}.",
                        "resourceRecordType": "CNAME",
                        "resourceRecordValue": "_x2.acm-validations.aws.",
                    }
                ],
            )
        elif args.typ == "aws:cloudfront/function:Function":
            outputs.update(arn=f"arn:aws:cloudfront::{ACCOUNT}:function/{args.inputs['name']}")
        elif args.typ == "aws:lambda/functionUrl:FunctionUrl":
            outputs.update(functionUrl=FUNCTION_URL)
        elif args.typ == "aws:route53/record:Record":
            outputs.update(fqdn=args.inputs["name"])
        self.resources.append(
            Registered(args.typ, args.name, dict(args.inputs), args.provider, resource_id)
        )
        return resource_id, outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        raise AssertionError(f"the program must not call {args.token}: no invokes under mocks")

    def of_type(self, typ: str) -> list[Registered]:
        return [r for r in self.resources if r.typ == typ]

    def one(self, typ: str) -> Registered:
        found = self.of_type(typ)
        assert len(found) == 1, (typ, [r.name for r in found])
        return found[0]


@dataclass
class ProgramRun:
    mocks: RecordingMocks
    site: AgentSite
    outputs: dict[str, Any]


def run_program(config: SiteConfig, preview: bool = False) -> ProgramRun:
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="agent-access", stack="test", preview=preview)
    holder: dict[str, Any] = {}

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        site = define(config)
        holder["site"] = site
        # `files` (one JSON string, a map in older state) is read with one apply, never
        # passed to Output.all: all() lifts every value of a dict into an Output of its
        # own (about four per file), which would be the harness's cost, not the
        # program's; the program itself only exports file_count and files_digest
        # (infra/__main__.py).
        files = site.files.apply(lambda encoded: holder.setdefault("files", encoded) and None)
        return pulumi.Output.all(
            base_url=site.base_url,
            bucket_name=site.bucket_name,
            distribution_id=site.distribution_id,
            file_count=site.file_count,
            files_digest=site.files_digest,
            files_read=files,
        ).apply(lambda values: holder.setdefault("outputs", values))

    program()
    outputs = {k: v for k, v in holder["outputs"].items() if k != "files_read"}
    return ProgramRun(mocks, holder["site"], {**outputs, "files": holder.get("files")})


def site_content(run: ProgramRun) -> Registered:
    return run.mocks.one("pulumi-python:dynamic/agent-access:SiteContent")


def provider_of(resource: Registered) -> Any:
    """The dynamic provider exactly as the engine would load it: dill, from the inputs."""
    return dill.loads(base64.b64decode(resource.inputs["__provider"]))


def props_of(resource: Registered) -> dict[str, Any]:
    return {k: v for k, v in resource.inputs.items() if k != "__provider"}
