"""What a preflight check answers, and the errors preflight raises.

A check returns one ``CheckResult``. Status semantics:
  PASS  the account is ready for this part of the stack.
  WARN  worth knowing but not a failure: extra cost, a partial zone offering, or an API that
        answered with an error so the check could not decide ("could not check: ...").
  FAIL  `pulumi up` would fail or leave the cluster unusable; fix the account or the config.

Credentials that are missing or rejected, or an endpoint that cannot be reached, are not a
check result: every check would fail the same way, so ``AwsAccessError`` is raised instead
(``access_error`` explains why in one paragraph).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from botocore.exceptions import (
    ClientError,
    CredentialRetrievalError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    TokenRetrievalError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError
from botocore.parsers import ResponseParserError

Status = Literal["PASS", "WARN", "FAIL"]
PASS: Status = "PASS"
WARN: Status = "WARN"
FAIL: Status = "FAIL"
_SEVERITY: dict[str, int] = {PASS: 0, WARN: 1, FAIL: 2}

#: Error codes meaning "these credentials are not accepted": every call would fail alike.
_CREDENTIAL_ERROR_CODES = frozenset(
    {
        "AuthFailure",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidAccessKeyId",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "MissingAuthenticationToken",
        "RequestExpired",
        "SignatureDoesNotMatch",
        "UnrecognizedClientException",
    }
)


# ---------------------------------------------------------------------------------------------
# Results and errors
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    """One row of the preflight report.

    ``check`` is a stable identifier (``ami:AL2023_x86_64_NVIDIA``, ``instance-type:g4dn.xlarge``,
    ``vcpu-quota:SPOT``, ...); ``details`` holds JSON-serialisable facts behind the reason.
    """

    check: str
    status: Status
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "reason": self.reason, "details": dict(self.details)}


class PreflightError(Exception):
    """Base of the errors preflight raises; catch this one to handle both."""


class PreflightFailed(PreflightError):
    """At least one check FAILed. ``results`` holds every result; str() has one line per FAIL."""

    def __init__(self, results: Sequence[CheckResult]):
        self.results: tuple[CheckResult, ...] = tuple(results)
        super().__init__(str(self))

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.status == FAIL)

    def __str__(self) -> str:
        return "\n".join(f"{r.check}: {r.reason}" for r in self.failures)


class AwsAccessError(PreflightError):
    """AWS could not be asked at all: no credentials, rejected credentials, no region, no network."""


def worst(statuses: Iterable[Status]) -> Status:
    return max(statuses, key=lambda s: _SEVERITY[s], default=PASS)


def failed(results: Iterable[CheckResult]) -> bool:
    return any(r.status == FAIL for r in results)


# ---------------------------------------------------------------------------------------------
# Error handling
# ---------------------------------------------------------------------------------------------


def error_code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", "") or "")


def one_line(text: str, limit: int = 240) -> str:
    """``text`` fit for a one-line reason: an HTML error page (from a proxy or an emulator)
    becomes its <title>, whitespace collapses, and long text is cut."""
    title = re.search(r"<title>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    if title:
        text = title.group(1)
    text = " ".join(re.sub(r"<[^>]+>", " ", text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_client_error(err: ClientError) -> str:
    error = err.response.get("Error", {})
    op = getattr(err, "operation_name", "") or "the API"
    code = str(error.get("Code") or err.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
    message = one_line(str(error.get("Message") or err))
    if code and message.startswith(code):  # an HTML page titled "404 Not Found" already names the code
        return f"{op} answered {message}"
    return f"{op} answered {code}: {message}"


_ENDPOINT_HINT = "Check AWS_ENDPOINT_URL (and AWS_ENDPOINT_URL_<SERVICE>) if set, a proxy in between, and the region."


def is_unparseable_reply(err: BaseException) -> bool:
    """True when botocore failed to read a reply as an AWS API answer: an HTML page with status 200
    (a captive portal, a proxy, a wrong AWS_ENDPOINT_URL), JSON from a non-AWS server, garbage.

    botocore raises ResponseParserError for XML it cannot parse, but a well-formed page without the
    expected result element surfaces as a bare KeyError from botocore/parsers.py; both are told
    apart from this library's own bugs by where they were raised."""
    if isinstance(err, ResponseParserError):
        return True
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.replace("\\", "/").endswith("botocore/parsers.py"):
            return True
        tb = tb.tb_next
    return False


def unparseable_reply_error(err: BaseException) -> AwsAccessError:
    detail = one_line(str(err), 160)
    return AwsAccessError(
        f"the AWS endpoint answered something that is not an AWS API reply ({type(err).__name__}: {detail}). "
        + _ENDPOINT_HINT
    )


def access_error(err: Exception) -> AwsAccessError:
    """A one-paragraph explanation of why AWS could not be asked at all."""
    if isinstance(err, ClientError) and error_code(err).isdigit():
        # Only an HTTP status, no AWS error code: the body was not an AWS error (an HTML page).
        return AwsAccessError(
            f"the AWS endpoint answered HTTP {error_code(err)} without an AWS error "
            f"({describe_client_error(err)}). " + _ENDPOINT_HINT
        )
    if isinstance(err, ValueError) and str(err).startswith("Invalid endpoint"):
        return AwsAccessError(f"{err}: expected a URL such as https://sts.us-west-2.amazonaws.com. " + _ENDPOINT_HINT)
    if isinstance(err, NoCredentialsError | PartialCredentialsError):
        return AwsAccessError(
            f"no AWS credentials found ({type(err).__name__}: {err}). Preflight reads the account with "
            "boto3's default credential chain: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
            "AWS_PROFILE with ~/.aws/credentials or an SSO login, or run where an instance/task role "
            "is available."
        )
    if isinstance(err, CredentialRetrievalError | TokenRetrievalError):
        return AwsAccessError(
            f"AWS credentials could not be loaded ({type(err).__name__}: {err}). Refresh them (for SSO: "
            "`aws sso login`) and run preflight again."
        )
    if isinstance(err, NoRegionError):
        return AwsAccessError("no AWS region: set aws:region in the stack file, or AWS_REGION / AWS_DEFAULT_REGION.")
    if isinstance(err, BotoConnectionError):
        return AwsAccessError(
            f"could not reach AWS ({type(err).__name__}: {err}). Check the network, and AWS_ENDPOINT_URL if it is set."
        )
    if is_unparseable_reply(err):
        return unparseable_reply_error(err)
    if isinstance(err, ClientError):
        return AwsAccessError(
            f"AWS rejected the credentials ({describe_client_error(err)}). Check that the access key "
            "exists and is active, and that a session token, if any, has not expired."
        )
    return AwsAccessError(f"could not call AWS ({type(err).__name__}: {err}).")


def could_not_check(check: str, err: ClientError, **details: Any) -> CheckResult:
    """WARN for an API that answered with an error, unless the credentials themselves are bad."""
    reraise_if_credentials(err)
    reason = f"could not check: {describe_client_error(err)}"
    return CheckResult(check, WARN, reason, {**details, "error": describe_client_error(err)})


def reraise_if_credentials(err: ClientError) -> None:
    if error_code(err) in _CREDENTIAL_ERROR_CODES:
        raise access_error(err) from err


# ---------------------------------------------------------------------------------------------
# Shared by the checks
# ---------------------------------------------------------------------------------------------


def region_of(client: Any) -> str:
    return str(client.meta.region_name)


def comma_list(items: Iterable[str]) -> str:
    return ", ".join(items) or "none"
