"""Run the real Pulumi program in-process against a simulated engine (Pulumi mocks).

Shared by the tests, the repository's ``python -m tooling render`` and the consumers'
``gpu-eks-review render`` (any Pulumi program of a project). It drives the Pulumi SDK through
its mocks and its resource-monitor protocol (``pulumi.runtime.mocks``, ``pulumi.runtime.proto``),
which are not a stable API: it is tested at the exact ``pulumi`` version requirements.txt pins.
Two things make mocked runs of a program reliable:

* Resource references. With pulumi 3.272 + pulumi-eks 4.4, the stock mock monitor rehydrates
  resource references found in inputs on its executor thread, racing the event loop (runs hang
  or fail with "attached to a different loop"). ``RecordingMonitor`` reports no support for the
  ``resourceReferences`` feature (both SupportsFeature and GetDeploymentInfo), so the SDK sends
  references as URNs/IDs, and ``FakeCloud`` never returns Resource objects as outputs.
* Hangs. ``run_program`` bounds the whole run with a timeout, so a hang fails loudly.

Data sources and remote components get the fake answers documented in ``FakeCloud``
(``fakecloud.py``).
"""

from __future__ import annotations

import asyncio
import logging
import runpy
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.proto import engine_pb2, resource_pb2
from pulumi.runtime.stack import run_pulumi_func

from ..config import stackfile
from .fakecloud import (  # noqa: F401  (the names the tests and tooling import from here)
    FAKE_ACCOUNT_ID,
    FAKE_AUTHENTICATION_MODE,
    FAKE_REGION,
    FAKE_ZONES,
    FakeCloud,
    FirstPreviewCloud,
)

DEFAULT_TIMEOUT_SECONDS = 60.0


@dataclass
class Registration:
    """What the program sent the engine for one resource."""

    urn: str
    type: str
    name: str
    custom: bool
    parent_urn: str | None
    inputs: dict[str, Any]
    #: The inputs as sent on the wire (secrets and unknowns still marked), JSON form.
    wire_inputs: dict[str, Any]
    provider: str | None
    protect: bool
    dependencies: list[str]
    aliases: list[Any]
    #: For each input, the resources its value comes from (the engine's propertyDependencies).
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    #: A remote component (pulumi-eks, awsx): built by its plugin, so its children are not simulated.
    remote: bool = False
    #: Other resource options that change how the engine updates the resource, when set (protocol
    #: names: ignoreChanges, replaceOnChanges, deleteBeforeReplace, retainOnDelete, deletedWith, ...).
    options: dict[str, Any] = field(default_factory=dict)


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The stock mock monitor, minus resource-reference support, recording every registration."""

    def __init__(self, mocks: pulumi_mocks.Mocks):
        super().__init__(mocks)
        self.registrations: dict[str, Registration] = {}
        self._lock = threading.Lock()

    def SupportsFeature(self, request):
        has_support = request.id not in ("outputValues", "resourceReferences")
        return type("SupportsFeatureResponse", (object,), {"hasSupport": has_support})

    def GetDeploymentInfo(self, request):
        info = super().GetDeploymentInfo(request)
        features = [f for f in info.supportedFeatures if f != resource_pb2.RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES]
        return resource_pb2.DeploymentInfo(supportedFeatures=features)

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            urn = response.urn
            reg = Registration(
                urn=urn,
                type=request.type,
                name=request.name,
                custom=bool(request.custom),
                parent_urn=request.parent or None,
                inputs=_deserialize(request.object),
                wire_inputs=json_format.MessageToDict(request.object),
                provider=request.provider or None,
                protect=bool(request.protect),
                dependencies=list(request.dependencies),
                property_dependencies={
                    key: list(deps.urns) for key, deps in request.propertyDependencies.items() if deps.urns
                },
                aliases=[json_format.MessageToDict(a) for a in request.aliases] + [str(a) for a in request.aliasURNs],
                outputs=dict(self.resources[urn].state),
                remote=bool(request.remote),
                options=_options(request),
            )
            with self._lock:
                self.registrations[urn] = reg
        return response


def _options(request: Any) -> dict[str, Any]:
    """The update-affecting options of a RegisterResourceRequest that differ from the defaults."""
    options: dict[str, Any] = {}
    for key in ("ignoreChanges", "replaceOnChanges", "additionalSecretOutputs", "hideDiffs", "replace_with"):
        values = list(getattr(request, key, ()) or ())
        if values:
            options[key] = values
    if request.deleteBeforeReplaceDefined and request.deleteBeforeReplace:
        options["deleteBeforeReplace"] = True
    if request.HasField("retainOnDelete") and request.retainOnDelete:
        options["retainOnDelete"] = True
    for key in ("deletedWith", "importId"):
        if getattr(request, key, ""):
            options[key] = getattr(request, key)
    if request.HasField("customTimeouts"):
        timeouts = json_format.MessageToDict(request.customTimeouts)
        if timeouts:
            options["customTimeouts"] = timeouts
    return options


def _deserialize(struct: Any) -> dict[str, Any]:
    return dict(rpc.deserialize_properties(struct))


@dataclass(frozen=True)
class Diagnostic:
    """A message the program logged (``pulumi.log``): its severity (``debug``, ``info``, ``warning``,
    ``error``), text and the simulator's URN of the resource it is about ("" for none)."""

    severity: str
    message: str
    urn: str


class DiagnosticsEngine:
    """The engine's ``Log`` as the mocks offer it (``pulumi.runtime.mocks.MockEngine`` passes the
    message to a logger, dropping the resource): here each message is kept with its resource, so a
    render can say what a warning is about."""

    SEVERITIES = {engine_pb2.DEBUG: "debug", engine_pb2.INFO: "info", engine_pb2.WARNING: "warning"}

    def __init__(self) -> None:
        self.logged: list[Diagnostic] = []

    def Log(self, request: Any) -> None:
        severity = self.SEVERITIES.get(request.severity, "error")
        self.logged.append(Diagnostic(severity, request.message, request.urn))


@dataclass
class Simulation:
    """The outcome of one simulated run."""

    #: Registrations in declaration order (program order), excluding the root stack.
    resources: list[Registration]
    #: Stack outputs, resolved (secrets unwrapped; see ``secret_outputs``).
    outputs: dict[str, Any]
    secret_outputs: set[str]
    #: Stack outputs not known until deployment.
    unknown_outputs: set[str]
    stack_urn: str
    #: Stack outputs as the engine would receive them (JSON form of the protobuf Struct: secrets and
    #: unknowns still marked, as in ``Registration.wire_inputs``).
    wire_outputs: dict[str, Any] = field(default_factory=dict)
    #: What the program logged, in order (the configuration warnings of the library's components).
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def warnings(self) -> list[tuple[Registration | None, str]]:
        """Each warning the program logged, with the resource it is about (None: the stack)."""
        by_urn = {r.urn: r for r in self.resources}
        return [(by_urn.get(d.urn), d.message) for d in self.diagnostics if d.severity == "warning"]

    def by_type(self, typ: str) -> list[Registration]:
        return [r for r in self.resources if r.type == typ]

    def one(self, typ: str, name: str | None = None) -> Registration:
        found = [r for r in self.by_type(typ) if name is None or r.name == name]
        if len(found) != 1:
            raise LookupError(
                f"expected exactly one {typ}{f' named {name!r}' if name else ''}, found {[r.name for r in found]}"
            )
        return found[0]

    def named(self, name: str) -> Registration:
        found = [r for r in self.resources if r.name == name]
        if len(found) != 1:
            raise LookupError(f"expected one resource named {name!r}, found {len(found)}")
        return found[0]

    def by_urn(self, urn: str) -> Registration:
        for r in self.resources:
            if r.urn == urn:
                return r
        raise LookupError(urn)


async def _resolve(value: Any) -> tuple[Any, bool, bool]:
    """(plain value, known, secret) of an Output / Input tree."""
    out = pulumi.Output.from_input(value)
    known = await out.is_known()
    secret = await out.is_secret()
    return await out.future(with_unknowns=True), known, secret


def _report_unretrieved(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio's report of an error nobody retrieved (a failed run leaves futures holding the error
    it raised to the caller), in one line without the traceback: asyncio's default handler formats
    it when the future is garbage-collected, at any later point of the process, and on Python 3.11
    that runs ast.parse (traceback's caret anchors), which inside another ast.parse corrupts that
    one's depth count ("AST constructor recursion depth mismatch", cpython gh-106905)."""
    logging.getLogger(__name__).error("%s: %r", context.get("message"), context.get("exception"))


def _reporting_all_but(raised: BaseException) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """The run's loop's exception handler once the run failed with ``raised``. The SDK resolves every
    output of the failed resource, and of all that depends on it, with that error; nobody awaits
    them, and each one garbage-collected later would print "Future exception was never retrieved"
    with the whole traceback (after a test run's summary, or inside an unrelated ``ast.parse``, which
    CPython 3.11 then fails: "AST constructor recursion depth mismatch"). The caller has that error
    (``run_program`` raised it, with its causes): any other one is still reported, in one line
    (``_report_unretrieved``)."""
    chain: list[BaseException] = []
    pending: list[BaseException | None] = [raised]
    while pending:
        exc = pending.pop()
        if exc is not None and not any(exc is seen for seen in chain):
            chain.append(exc)
            pending += [exc.__cause__, exc.__context__]

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if not any(context.get("exception") is seen for seen in chain):
            _report_unretrieved(loop, context)

    return handler


def run_program(
    program: Callable[[], Any],
    config: Mapping[str, str],
    *,
    project: str,
    stack: str,
    preview: bool = False,
    mocks: pulumi_mocks.Mocks | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> Simulation:
    """Run ``program`` under mocks with ``config`` (fully qualified keys, CLI string form)."""
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(_report_unretrieved)
    previous_loop = None
    try:
        previous_loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        previous_loop = None
    asyncio.set_event_loop(loop)
    # The mock monitor answers on executor threads, and the SDK gives each such thread an event
    # loop of its own that nobody closes: garbage-collected later, they print "Exception ignored
    # in BaseEventLoop.__del__". Threads of our own executor get loops that are closed below.
    thread_loops: list[asyncio.AbstractEventLoop] = []

    def give_thread_a_loop() -> None:
        thread_loop = asyncio.new_event_loop()
        thread_loop.set_exception_handler(_report_unretrieved)
        asyncio.set_event_loop(thread_loop)
        thread_loops.append(thread_loop)

    executor = ThreadPoolExecutor(thread_name_prefix="pulumi-mock", initializer=give_thread_a_loop)
    loop.set_default_executor(executor)
    try:
        monitor = RecordingMonitor(mocks or FakeCloud())
        # Start from a clean runtime: a previous run's root stack and pending work must not leak.
        runtime_settings.ROOT.set(None)
        runtime_settings.SETTINGS.rpc_manager.clear()
        runtime_settings.SETTINGS.outputs.clear()
        pulumi.runtime.set_mocks(monitor.mocks, project=project, stack=stack, preview=preview, monitor=monitor)
        engine = DiagnosticsEngine()
        runtime_settings.SETTINGS.engine = engine
        pulumi.runtime.set_all_config(dict(config), [])

        declared: list[pulumi.Resource] = []

        def record(args: pulumi.ResourceTransformationArgs) -> None:
            # Stack transformations run synchronously in each resource's constructor: program order.
            declared.append(args.resource)
            return None

        pulumi.runtime.register_stack_transformation(record)
        root = runtime_settings.get_root_resource()

        async def run() -> Simulation:
            await run_pulumi_func(program)
            urns = [await r.urn.future() for r in declared]
            outputs: dict[str, Any] = {}
            secret: set[str] = set()
            unknown: set[str] = set()
            for key, value in getattr(root, "outputs", {}).items():
                plain, known, is_secret = await _resolve(value)
                outputs[key] = plain
                if is_secret:
                    secret.add(key)
                if not known:
                    unknown.add(key)
            stack_urn = await root.urn.future()
            regs = [monitor.registrations[u] for u in urns if u in monitor.registrations]
            wire = json_format.MessageToDict(await rpc.serialize_properties(getattr(root, "outputs", {}), {}))
            # A message about a resource is sent once its URN resolves (pulumi/log.py _log schedules a
            # task): every URN is known by now, and a few turns of the loop deliver those messages.
            for _ in range(5):
                await asyncio.sleep(0)
            return Simulation(regs, outputs, secret, unknown, stack_urn, wire, list(engine.logged))

        try:
            return loop.run_until_complete(asyncio.wait_for(run(), timeout))
        except BaseException as failure:
            loop.set_exception_handler(_reporting_all_but(failure))
            raise
    finally:
        try:
            # A timed-out run leaves tasks behind: cancel them so they die with this loop.
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
            # Do not wait: after a timeout a worker may be stuck, and waiting would bring the hang
            # back. Idle workers' loops are closed; a stuck one's is left to the thread.
            executor.shutdown(wait=False, cancel_futures=True)
            for thread_loop in thread_loops:
                if not thread_loop.is_running():
                    thread_loop.close()
            asyncio.set_event_loop(previous_loop if previous_loop and not previous_loop.is_closed() else None)


def program_from_file(path: Path) -> Callable[[], None]:
    """A program callable that runs the Pulumi program file ``path`` (e.g. __main__.py)."""

    def program() -> None:
        root = str(path.parent)
        if root not in sys.path:
            sys.path.insert(0, root)
        runpy.run_path(str(path), run_name="__main__")

    return program


def program_file(root: Path) -> Path:
    """The program file of the Pulumi project in ``root``: Pulumi.yaml's ``main`` (a file, or a
    folder holding ``__main__.py``; default: the project folder), as the Python language host
    finds it."""
    main = stackfile.project_file(root).get("main") or "."
    path = (root / str(main)).resolve()
    return path / "__main__.py" if path.is_dir() else path


def run_stack(
    stack: str,
    root: Path,
    *,
    config_overrides: Mapping[str, Any] | None = None,
    preview: bool = False,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    mocks: pulumi_mocks.Mocks | None = None,
) -> Simulation:
    """Run the program of the project in ``root`` with the config of its stack file.

    ``mocks`` defaults to ``FakeCloud()``; pass ``FirstPreviewCloud()`` with ``preview=True`` to
    see what a first ``pulumi preview`` would (computed values unknown).
    """
    config = stackfile.read_stack_config(stack, root)
    config.update(config_overrides or {})
    return run_program(
        program_from_file(program_file(root)),
        stackfile.cli_config(config),
        project=stackfile.project_name(root),
        stack=stack,
        preview=preview,
        mocks=mocks,
        timeout=timeout,
    )
