"""The command grammar of the driver's ``nvidia-smi`` 580.159.04, read at test time from what the tool
itself printed on a real H200 (../shared/observed/nvidia-smi/580.159.04-h200, its SOURCE.md), and the
transcripts recorded there. Nothing here is written from what the boot stage expects.

``nvidia-smi -h`` (``nvidia-smi-h.txt``) groups the options by command: a section (``LIST OPTIONS``,
``SELECTIVE QUERY OPTIONS``, ``DEVICE MODIFICATION OPTIONS``, ...) names the options that choose it
(``[one of]``, ``[any one of]``, the section's first options), those it requires (``[mandatory]``) and
those it takes besides (``[plus any of]``, ``[plus optional]``). ``LIST OPTIONS`` has no such list:
``-L`` takes nothing else, which is why ``nvidia-smi -i 0 -L`` exits 2 (transcripts.txt). A long
option spelled with ``=`` takes a value (``--id=``), its short form the next word (``-i 0``); an
option of the selective queries takes its properties after ``=`` (``--query-gpu=index``: "Call
--help-query-gpu", whose properties ``more-help-query-gpu.txt`` lists); ``-r`` takes an optional
``bus`` ("use -r bus"). ``nvidia-smi mig -h`` (``nvidia-smi-mig-h.txt``) names, per command, the
options it takes ("Options -i and -gi can be used ..."); ``-C`` goes with ``-cgi`` only.

Refusals print what the real tool printed for the recorded ones, ``ERROR: Option <as spelled> is not
valid for this command. Please run 'nvidia-smi -h' for help.``, exit 2 (transcripts.txt; a ``-d`` flag
outside the help's list: "Failed to parse --display/-d flags", exit 2, more-errors.txt). The
wording for an invalid ``mig`` combination, a missing ``--format=`` and an unknown query property
was not recorded: the first uses the same message, the others say what is wrong, all exit 2.

The ``-i`` of the main commands takes what ``mig -h`` says its ``-i`` takes (an index, a PCI bus id or
a UUID, comma separated): NVIDIA's mig-parted resets its GPUs with ``nvidia-smi -r -i <bus id>,...``
(NVIDIA/mig-parted v0.15.0 ``cmd/nvidia-mig-parted/util/device.go`` ``nvmlResetAllGPUs``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from tests.support.paths import ROOT
from tests.support.reference import observed_path

#: Where the recordings of the real tool sit (beside the project, like ../shared/reference).
OBSERVED = ROOT.parent / "shared" / "observed" / "nvidia-smi" / "580.159.04-h200"

#: The recorded transcripts: ``$ <command>``, its output, ``rc=<status>``.
TRANSCRIPTS = (
    "transcripts.txt",
    "more-errors.txt",
    "more-mig-lists.txt",
    "more-query.txt",
    "more-q.txt",
    "more-topo.txt",
)

#: The sections whose commands change a device (or a unit): never read-only.
MODIFYING_SECTIONS = ("DEVICE MODIFICATION OPTIONS", "UNIT MODIFICATION OPTIONS")
#: Sections whose commands only read the devices (without an option that writes a file: ``-f``).
READING_SECTIONS = ("LIST OPTIONS", "SELECTIVE QUERY OPTIONS", "QUERY OPTIONS", "SUMMARY OPTIONS")
#: Options that write a file on the host or loop until interrupted.
WRITES_OR_LOOPS = ("-f", "-l", "-lms")


class Refused(Exception):
    """The real tool would refuse this command line: ``output`` and ``status`` as it prints them."""

    def __init__(self, output: str, status: int = 2) -> None:
        super().__init__(output)
        self.output, self.status = output, status


def not_valid(spelling: str) -> Refused:
    return Refused(f"ERROR: Option {spelling} is not valid for this command. Please run 'nvidia-smi -h' for help.\n")


@dataclass(frozen=True)
class Option:
    """One option: its spellings and whether it takes a value (``none``, ``required``, ``optional``)."""

    short: str | None
    long: str | None
    value: str = "none"
    #: The words an optional value may be (``-r bus``).
    words: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.short or self.long or ""


@dataclass
class Section:
    """A command of the main grammar: the options that choose it, must come with it, may come with it."""

    name: str
    choose: list[Option] = field(default_factory=list)
    mandatory: list[Option] = field(default_factory=list)
    modifiers: list[Option] = field(default_factory=list)
    #: ``<no arguments>`` chooses it (SUMMARY OPTIONS).
    bare: bool = False
    #: Companions: an option that may come with one chosen option only (``-m`` with ``-lgc``).
    companions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Parsed:
    """An accepted command line: its section (or ``mig``), the chosen option, every option's value."""

    section: str
    command: str
    values: dict[str, str | None]

    @property
    def read_only(self) -> bool:
        """Reads the GPUs and writes nothing (no file, no loop): derived from the help's sections."""
        if self.section == "mig":
            return self.command.startswith("-l")
        return self.section in READING_SECTIONS and not any(o in self.values for o in WRITES_OR_LOOPS)


_OPTION = re.compile(r"^ {2,11}(?:(-[a-zA-Z]+),?\s+)?(--[a-z][\w-]*=?)?(?=\s|$)")
_HEADING = re.compile(r"^  ([A-Z][A-Z ]+ OPTIONS):$")
_MARKER = re.compile(r"^\s+\[(one of|mandatory|plus any of|any one of|plus optional)\]$")


def _main_sections(text: str) -> tuple[list[Section], list[str]]:
    """The sections of ``nvidia-smi -h`` and the sub-commands it names (``"nvidia-smi mig -h"``)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("nvidia-smi [OPTION1"))
    sections = [Section("GENERAL")]
    bucket = sections[0].choose
    last: Option | None = None
    for line in lines[start + 1 :]:
        if m := _HEADING.match(line):
            sections.append(Section(m.group(1)))
            bucket, last = sections[-1].choose, None
            continue
        if m := _MARKER.match(line):
            kind = m.group(1)
            s = sections[-1]
            bucket = {"one of": s.choose, "any one of": s.choose, "mandatory": s.mandatory}.get(kind, s.modifiers)
            continue
        if line.strip().startswith("<no arguments>"):
            sections[-1].bare = True
            continue
        if not line.strip() or (line.startswith(" ") and not line.startswith("  ")):
            continue  # a blank line, or a heading of the sub-commands (" MIG:")
        m = _OPTION.match(line)
        if m and (m.group(1) or m.group(2)):
            short, long = m.group(1), m.group(2)
            value = "required" if long and long.endswith("=") else "none"
            rest = line[m.end() :]
            if "Call --help-query" in rest or (long and long.startswith("--query-")):
                value = "required"  # a property list after "=" (more-query.txt)
            last = Option(short, long.rstrip("=") if long else None, value)
            bucket.append(last)
            continue
        if last is not None and line.startswith(" " * 16):
            # A description line: "use -r bus" gives -r an optional value; "--mode can be specified"
            # and "optional argument --scope" make an option a companion of the one described.
            w = re.search(r"use (-\w+) (\w+)\.", line)
            if w and w.group(1) == last.short:
                new = Option(last.short, last.long, "optional", (w.group(2),))
                bucket[bucket.index(last)] = new
                last = new
            for other in re.findall(r"(?:Optionally, |optional argument )(--[\w-]+)", line):
                sections[-1].companions[other] = last.name
    subcommands = re.findall(r'"nvidia-smi ([\w-]+) -h"', text)
    return sections, subcommands


@dataclass(frozen=True)
class MigCommand:
    option: Option
    targets: tuple[str, ...]
    description: str


def _mig_commands(text: str) -> tuple[dict[str, Option], dict[str, MigCommand]]:
    """``nvidia-smi mig -h``: every option, and per command the targets it takes."""
    entries: list[tuple[str, str, str]] = []
    for line in text.splitlines():
        if m := re.match(r"^\s{4}\[(-\w+) \| (--[\w-]+)\]: (.*)$", line):
            entries.append((m.group(1), m.group(2), m.group(3)))
        elif entries and line.strip():
            short, long, desc = entries[-1]
            entries[-1] = (short, long, f"{desc} {line.strip()}")
    options: dict[str, Option] = {}
    descriptions = {}
    for short, long, desc in entries:
        value = "none"
        if "Provide comma separated values" in desc or "for the given profile" in desc:
            value = "optional" if "If no profile name or ID is given" in desc else "required"
        options[short] = Option(short, long, value)
        descriptions[short] = desc
    targets = {"-i", "-gi", "-ci"}
    commands = {}
    for short, desc in descriptions.items():
        if short in targets or short == "-C":
            continue
        named = re.search(r"Options? ((?:-\w+(?:, | and )?)+) can be used", desc)
        allowed = tuple(re.findall(r"-\w+", named.group(1))) if named else ()
        commands[short] = MigCommand(options[short], allowed, desc)
    # -C: "when used with the option to create a GPU instance (-cgi)".
    with_c = re.search(r"\((-\w+)\)", descriptions["-C"])
    assert with_c is not None, descriptions["-C"]
    commands[with_c.group(1)] = MigCommand(
        commands[with_c.group(1)].option,
        (*commands[with_c.group(1)].targets, "-C"),
        commands[with_c.group(1)].description,
    )
    return options, commands


def _words(args: list[str], i: int, option: Option) -> tuple[str | None, int]:
    """The value of ``option`` spelled at ``args[i]`` and the index after it."""
    word = args[i]
    if "=" in word:
        if option.value == "none":
            raise not_valid(word)
        return word.split("=", 1)[1], i + 1
    if option.value == "required":
        if i + 1 >= len(args):
            raise not_valid(word)
        return args[i + 1], i + 2
    word_next = args[i + 1] if i + 1 < len(args) else "-"
    if option.value == "optional" and not word_next.startswith("-") and (not option.words or word_next in option.words):
        return word_next, i + 2
    return None, i + 1


class Grammar:
    """What ``nvidia-smi`` 580.159.04 accepts, from its help texts."""

    def __init__(self, main_help: str, mig_help: str, query_help: str) -> None:
        self.sections, self.subcommands = _main_sections(main_help)
        self.mig_options, self.mig_commands = _mig_commands(mig_help)
        self.display_flags = set(re.findall(r"\b[A-Z][A-Z_]{2,}\b", _display_text(main_help)))
        self.query_properties = {
            name for line in query_help.splitlines() if line.startswith('"') for name in re.findall(r'"([^"]+)"', line)
        }
        self.by_spelling: dict[str, list[tuple[Section, Option]]] = {}
        for section in self.sections:
            for option in (*section.choose, *section.mandatory, *section.modifiers):
                for spelling in (option.short, option.long):
                    if spelling:
                        self.by_spelling.setdefault(spelling, []).append((section, option))

    def parse(self, args: list[str]) -> Parsed:
        """The command ``nvidia-smi <args>`` runs, or ``Refused`` as the real tool refuses it."""
        if args and args[0] in self.subcommands:
            if args[0] != "mig":
                raise NotImplementedError(f"nvidia-smi {args[0]}: its grammar was not recorded")
            return self._mig(args[1:])
        words = [a.split("=", 1)[0] if a.startswith("--") else a for a in args]
        chooser = next(
            (
                (s, o)
                for w in words
                for s, o in self.by_spelling.get(w, [])
                if o in s.choose and not (s.name == "SHOW DTD OPTIONS" and "-q" in words)
            ),
            None,
        )
        section = chooser[0] if chooser else next(s for s in self.sections if s.bare)
        values: dict[str, str | None] = {}
        chosen: Option | None = None
        i = 0
        while i < len(args):
            word = words[i]
            option = next(
                (o for o in (*section.choose, *section.mandatory, *section.modifiers) if word in (o.short, o.long)),
                None,
            )
            if option is None:
                raise not_valid(args[i])
            if option in section.choose:
                companion_of = section.companions.get(option.long or "")
                if chosen is not None and companion_of is None:
                    raise not_valid(args[i])
                if companion_of is None:
                    chosen = option
            value, i = _words(args, i, option)
            values[option.name] = value
        for companion, master in section.companions.items():
            option = next(o for o in section.choose if o.long == companion)
            if option.name in values and (chosen is None or chosen.name != master):
                raise not_valid(option.short or companion)
        for option in section.mandatory:
            if option.name not in values:
                raise Refused(
                    f"ERROR: {option.long}= is mandatory for this command. Please run 'nvidia-smi -h' for help.\n"
                )
        if "-d" in values and not set((values["-d"] or "").split(",")) <= self.display_flags:
            raise Refused("Failed to parse --display/-d flags\n")
        for name in ("--query-gpu",):
            if name in values:
                unknown = [p for p in (values[name] or "").split(",") if p not in self.query_properties]
                if unknown:
                    raise Refused(f'Field "{unknown[0]}" is not a valid field to query.\n')
        if "--format" in values:
            formats = (values["--format"] or "").split(",")
            if "csv" not in formats or not set(formats) <= {"csv", "noheader", "nounits"}:
                raise not_valid(f"--format={values['--format']}")
        command = chosen.name if chosen else ""
        return Parsed(section.name, command, values)

    def _mig(self, args: list[str]) -> Parsed:
        values: dict[str, str | None] = {}
        command: MigCommand | None = None
        i = 0
        while i < len(args):
            option = next((o for o in self.mig_options.values() if args[i].split("=")[0] in (o.short, o.long)), None)
            if option is None:
                raise not_valid(args[i])
            if option.short in self.mig_commands:
                if command is not None:
                    raise not_valid(args[i])
                command = self.mig_commands[option.short]
            value, i = _words(args, i, option)
            values[option.name] = value
        if command is None:
            raise not_valid("mig")
        for name in values:
            if name != command.option.short and name not in command.targets:
                raise not_valid(name)
        return Parsed("mig", command.option.short or "", values)


def _display_text(main_help: str) -> str:
    """The ``-d, --display=`` description: its flags, up to "Flags can be combined"."""
    start = main_help.index("--display=")
    return main_help[start : main_help.index("Flags can be combined", start)]


@cache
def grammar() -> Grammar:
    return Grammar(
        observed_path("nvidia-smi-h.txt").read_text(),
        observed_path("nvidia-smi-mig-h.txt").read_text(),
        observed_path("more-help-query-gpu.txt").read_text(),
    )


@dataclass(frozen=True)
class Recording:
    """One recorded command: its arguments, exact output (stdout and stderr as captured) and status."""

    source: str
    args: tuple[str, ...]
    output: str
    status: int


def parse_transcript(source: str, text: str) -> tuple[list[Recording], list[str]]:
    """The complete recordings of one transcript file, and the commands recorded without a status."""
    done: list[Recording] = []
    incomplete: list[str] = []
    command: str | None = None
    output: list[str] = []
    for line in text.splitlines():
        if line.startswith("$ nvidia-smi"):
            if command is not None:
                incomplete.append(command)
            command, output = line[2:], []
        elif command is not None and (m := re.fullmatch(r"rc=(\d+)", line)):
            text_out = "".join(f"{o}\n" for o in output)
            done.append(Recording(source, tuple(command.split()[1:]), text_out, int(m.group(1))))
            command = None
        elif command is not None:
            output.append(line)
    if command is not None:
        incomplete.append(command)
    return done, incomplete


@cache
def recordings() -> tuple[dict[tuple[str, ...], Recording], tuple[Recording, ...], tuple[str, ...]]:
    """Per command line its first recording (transcripts.txt first), the later recordings of the same
    command that differ from it, and the commands recorded without an exit status."""
    first: dict[tuple[str, ...], Recording] = {}
    differing: list[Recording] = []
    incomplete: list[str] = []
    for name in TRANSCRIPTS:
        done, cut = parse_transcript(name, observed_path(name).read_text())
        incomplete += cut
        for rec in done:
            if rec.args not in first:
                first[rec.args] = rec
            elif (first[rec.args].output, first[rec.args].status) != (rec.output, rec.status):
                differing.append(rec)
    return first, tuple(differing), tuple(incomplete)
