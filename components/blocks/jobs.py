"""How long Pulumi waits for a Job the library runs (the verification's, a team's check): its
deadline and a margin, or not at all (pulumi-kubernetes reads both annotations)."""

from __future__ import annotations

#: Pulumi's await bound per Job: its deadline plus a minute for the Job controller to report.
AWAIT_MARGIN_SECONDS = 60
#: pulumi-kubernetes waits this long for the resource before the update fails.
TIMEOUT_ANNOTATION = "pulumi.com/timeoutSeconds"
#: pulumi-kubernetes creates a resource with this annotation and does not wait for it (PR #417).
SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"


def await_annotations(deadline_seconds: int, skip_await: bool = False) -> dict[str, str]:
    """The annotations of a Job whose ``activeDeadlineSeconds`` is ``deadline_seconds``: Pulumi
    waits for it that long plus the margin; with ``skip_await`` not at all."""
    annotations = {TIMEOUT_ANNOTATION: str(deadline_seconds + AWAIT_MARGIN_SECONDS)}
    if skip_await:
        annotations[SKIP_AWAIT_ANNOTATION] = "true"
    return annotations
