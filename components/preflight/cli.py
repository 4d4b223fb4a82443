"""``python -m gpu_eks preflight``: run the preflight checks for one stack and report.

Exit codes: 0 nothing failed (WARN rows allowed), 1 a check failed, 2 the checks could not run
(invalid config, unknown stack, no region, no or rejected AWS credentials, AWS unreachable).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import boto3
import yaml
from botocore.exceptions import BotoCoreError, ClientError

from ..check.loading import eks_regions, load_stack
from ..config.errors import ConfigError
from ..config.stackfile import StackNotFound, find_project_root, region, stack_file
from ..version import PACKAGE
from .results import FAIL, PASS, WARN, AwsAccessError, CheckResult, access_error, error_code, is_unparseable_reply
from .run import run_checks

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CANNOT_RUN = 2

_PROG = f"python -m {PACKAGE} preflight"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stack", default="dev", help="stack name: Pulumi.<stack>.yaml in the project's stackConfigDir (default: dev)"
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help="project folder holding Pulumi.yaml (default: the nearest one from the current directory up)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the results as a JSON list (an error object when the checks cannot run)",
    )


def resolve_region(config: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """The stack's aws:region, as the program uses; else the environment, as boto3 would."""
    return (
        region(dict(config))
        or environ.get("AWS_REGION")
        or environ.get("AWS_DEFAULT_REGION")
        # The region of the active AWS profile (~/.aws/config), if any.
        or boto3.Session().region_name
    )


def format_table(results: Sequence[CheckResult]) -> str:
    width = max([len("CHECK"), *(len(r.check) for r in results)])
    lines = [f"{'CHECK':<{width}}  STATUS  REASON"]
    lines += [f"{r.check:<{width}}  {r.status:<6}  {r.reason}" for r in results]
    counts = {s: sum(1 for r in results if r.status == s) for s in (PASS, WARN, FAIL)}
    lines.append("")
    lines.append(f"{counts[PASS]} passed, {counts[WARN]} warned, {counts[FAIL]} failed")
    return "\n".join(lines)


def format_json(results: Sequence[CheckResult]) -> str:
    return json.dumps([r.to_dict() for r in results], indent=2, default=str)


def _cannot_run(message: str, as_json: bool = False) -> int:
    """Exit 2 with ``message`` on stderr; with --json also a JSON object on stdout, so a tool
    reading stdout always gets JSON: ``{"error": message, "exitCode": 2}``."""
    print(f"{_PROG}: {message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"error": message, "exitCode": EXIT_CANNOT_RUN}, indent=2))
    return EXIT_CANNOT_RUN


def _account_id(session: boto3.Session, region_name: str) -> str | None:
    """The account the credentials belong to; fails fast, before any check, on bad credentials.

    GetCallerIdentity needs no IAM permission, so an error here is about the credentials."""
    try:
        return str(session.client("sts", region_name=region_name).get_caller_identity()["Account"])
    except BotoCoreError as err:
        raise access_error(err) from err
    except ClientError as err:
        if error_code(err) in ("AccessDenied", "AccessDeniedException"):
            return None  # an SCP may deny even this; the checks can still run
        raise access_error(err) from err
    except Exception as err:
        if is_unparseable_reply(err) or (isinstance(err, ValueError) and str(err).startswith("Invalid endpoint")):
            raise access_error(err) from err
        raise


def run(args: argparse.Namespace) -> int:
    stack: str = args.stack
    root: Path = find_project_root(args.root)
    try:
        config, settings = load_stack(stack, root)
    except StackNotFound as err:
        return _cannot_run(f"unknown stack {stack!r}: {err}", args.json)
    except ConfigError as err:
        return _cannot_run(f"stack {stack!r}: {err.report()}", args.json)
    except (OSError, ValueError, yaml.YAMLError, KeyError, TypeError) as err:
        return _cannot_run(
            f"could not read stack {stack!r} under {root} ({type(err).__name__}: {err}); expected "
            "Pulumi.yaml with a name and Pulumi.<stack>.yaml (in its stackConfigDir) with a config map",
            args.json,
        )

    region_name = resolve_region(config, os.environ)
    if not region_name:
        return _cannot_run(
            f"no AWS region for stack {stack!r}: received no aws:region in {stack_file(stack, root)} "
            "and no AWS_REGION or AWS_DEFAULT_REGION; expected one of them",
            args.json,
        )

    if region_name not in eks_regions():
        # Otherwise botocore would build https://sts.<region>.amazonaws.com and fail on DNS, or
        # refuse a malformed name with a traceback.
        return _cannot_run(
            f"aws:region: received {region_name!r}; expected a region where EKS runs (botocore's endpoint data), "
            "from aws:region in the stack file, AWS_REGION / AWS_DEFAULT_REGION or the AWS profile",
            args.json,
        )
    session = boto3.Session(region_name=region_name)
    try:
        account = _account_id(session, region_name)
        results = run_checks(settings, region_name, session=session)
    except AwsAccessError as err:
        return _cannot_run(str(err), args.json)

    if args.json:
        print(format_json(results))
    else:
        print(
            f"Preflight of stack {stack} (cluster {settings.cluster_name}) in {region_name}, "
            f"account {account or 'unknown'}\n"
        )
        print(format_table(results))
    return EXIT_FAILED if any(r.status == FAIL for r in results) else EXIT_OK
