"""Preflight against endpoints that do not answer like AWS (issue 7, section 4): every case is a
one-paragraph message and exit 2, never a traceback.

A loopback HTTP server (127.0.0.1, a free port) plays the wrong endpoint: an HTML page with
status 200 (a captive portal or proxy), an HTML 500, JSON from a non-AWS server, bytes that are
not a document. botocore reads STS (the first call) as the AWS query protocol: XML.
"""

from __future__ import annotations

import http.server
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.preflight.results import AwsAccessError, access_error, is_unparseable_reply
from tests.support.commands import loopback_server
from tests.support.preflight import preflight_config, preflight_env, run_preflight, write_stack

REPLIES: dict[str, tuple[int, str, bytes]] = {
    "html-200": (200, "text/html", b"<html><head><title>Welcome to nginx!</title></head><body>hi</body></html>"),
    "html-500": (500, "text/html", b"<html><head><title>500 Internal Server Error</title></head></html>"),
    "json-200": (200, "application/json", b'{"hello": "world"}'),
    "bytes-200": (200, "application/octet-stream", b"\x00\xff not a document"),
}


class _Handler(http.server.BaseHTTPRequestHandler):
    reply: tuple[int, str, bytes] = REPLIES["html-200"]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        status, content_type, body = self.reply
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(params=sorted(REPLIES))
def wrong_endpoint(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    handler = type("Handler", (_Handler,), {"reply": REPLIES[request.param]})
    with loopback_server(handler) as base:
        yield request.param, base


EXPECTED = {
    "html-200": "the AWS endpoint answered something that is not an AWS API reply "
    "(KeyError: 'GetCallerIdentityResult')",
    "html-500": "the AWS endpoint answered HTTP 500 without an AWS error (GetCallerIdentity answered 500: Internal "
    "Server Error)",
    "json-200": "the AWS endpoint answered something that is not an AWS API reply (ResponseParserError: Unable to "
    "parse response",
    "bytes-200": "the AWS endpoint answered something that is not an AWS API reply (ResponseParserError: Unable to "
    "parse response",
}


def test_a_reply_that_is_not_aws_exits_2_with_a_clear_message(wrong_endpoint: tuple[str, str], tmp_path: Path):
    kind, url = wrong_endpoint
    write_stack(tmp_path, "dev", preflight_config())
    result = run_preflight(tmp_path, "dev", preflight_env(tmp_path, url, AWS_MAX_ATTEMPTS="1"))
    assert (result.returncode, result.stdout) == (2, "")
    assert "Traceback" not in result.stderr
    assert EXPECTED[kind] in result.stderr
    assert "Check AWS_ENDPOINT_URL" in result.stderr


def test_connection_refused_exits_2(tmp_path: Path):
    write_stack(tmp_path, "dev", preflight_config())
    # Port 9 (discard) on loopback: nothing listens there in the test environment.
    result = run_preflight(tmp_path, "dev", preflight_env(tmp_path, "http://127.0.0.1:9", AWS_MAX_ATTEMPTS="1"))
    assert (result.returncode, result.stdout) == (2, "")
    assert "could not reach AWS (EndpointConnectionError" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_endpoint_that_is_not_a_url_exits_2(tmp_path: Path):
    write_stack(tmp_path, "dev", preflight_config())
    result = run_preflight(tmp_path, "dev", preflight_env(tmp_path, "not-a-url"))
    assert (result.returncode, result.stdout) == (2, "")
    assert "Invalid endpoint: not-a-url: expected a URL such as https://sts.us-west-2.amazonaws.com" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("region", ["mars-1", "us west 2", "us-wset-2"])
def test_a_region_without_eks_from_the_environment_exits_2(region: str, tmp_path: Path):
    config = preflight_config()
    del config["aws:region"]
    write_stack(tmp_path, "dev", config)
    result = run_preflight(tmp_path, "dev", preflight_env(tmp_path, None, AWS_REGION=region))
    assert (result.returncode, result.stdout) == (2, "")
    assert f"aws:region: received {region!r}; expected a region where EKS runs" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_region_without_eks_in_the_stack_file_is_a_config_error(tmp_path: Path):
    write_stack(tmp_path, "dev", {**preflight_config(), "aws:region": "mars-1"})
    result = run_preflight(tmp_path, "dev", preflight_env(tmp_path, None))
    assert result.returncode == 2
    assert 'aws:region: received "mars-1"; expected' in result.stderr
    assert "Traceback" not in result.stderr


def test_our_own_bugs_are_not_mistaken_for_bad_replies():
    try:
        {}["x"]
    except KeyError as err:
        assert not is_unparseable_reply(err)
    assert isinstance(access_error(ValueError("Invalid endpoint: x")), AwsAccessError)
