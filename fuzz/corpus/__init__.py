"""The corpus: shrunk failing programs kept as versioned, human-readable JSON, one file per entry,
each with a standalone reproducer script beside it (fuzz/corpus/reproducer.py).

Hypothesis's example database is a cache (its keys change with the source, and the `ci` profile
has none), so findings that must outlive a code change live here. `pytest fuzz/` replays every
entry before fuzzing (fuzz/test_corpus.py) and writes a new entry when a run finds a failure.

An entry's `status` says what a replay must show:
- `must-pass`: a fixed regression; the replay must keep every promise;
- `known-divergence`: a finding on the Triton versions in `divergence_versions`; there the replay
  must break `invariant` (an expected failure that turns into a failure when it stops showing);
  on every other version it must pass;
- `new`: written by a run and not triaged yet; replayed like `must-pass` (it fails until someone
  decides: fix, or mark it a known divergence).

Format 2 gives each step its kind (engine.Kind); format 1 had only the step's display text, and
its entries are migrated when read (`_kind_of_v1`, the one place that text is read back).
"""
from __future__ import annotations

import datetime
import hashlib
import json
from pathlib import Path

import attrs

from ..checker.divergences import KNOWN
from ..files import atomic_write
from ..checker.model import too_long
from ..spec import ModelSpec
from ..values import Answer, AnyOrder, Cancelled, EndedOr, Fault, Kind, Outcome, Queued, Refusal, Request, StepRecord, program_lines

FORMAT_VERSION = 2
READS = (1, 2)  # format 1 entries are migrated on load
STATUSES = ("must-pass", "known-divergence", "new")


class CorpusError(ValueError):
    """A corpus file that cannot be used; the message names the file and what is wrong."""

    def __init__(self, path, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"corpus file {self.path}: {problem}")


@attrs.frozen
class CorpusEntry:
    name: str  # the file name without extension
    status: str
    model: str
    spec: ModelSpec  # the model's configuration when the entry was recorded
    triton_version: str  # where it was recorded
    invariant: str  # the promise the program broke there
    detail: str
    steps: tuple  # StepRecord
    divergence: str | None = None  # key in fuzz/checker/divergences.py, for known-divergence entries
    divergence_versions: tuple = ()  # Triton versions on which the replay must break `invariant`
    found: str = ""  # UTC time of recording, ISO 8601
    note: str = ""
    format_version: int = FORMAT_VERSION
    # Known divergences the reference took as built when the program was found (a campaign that
    # fuzzed on past them): a replay takes them so too, on the builds that have them.
    accepts: tuple = ()

    def __attrs_post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        unknown = [k for k in self.accepts if k not in {d.key for d in KNOWN}]
        if unknown:
            raise ValueError(f"accepts names no known divergence: {', '.join(unknown)}")
        if self.status == "known-divergence" and not self.divergence_versions:
            raise ValueError("a known-divergence entry must name the Triton versions it diverges on")

    def diverges_on(self, version: str | None) -> bool:
        return self.status == "known-divergence" and version in self.divergence_versions

    def sends_string_ids(self) -> bool:
        """Whether the program names a sequence by a string id (the misuse ids "" and over-long
        ones are malformed requests, not sequence ids)."""
        return any(isinstance(s.request.seq_id, str) and s.request.seq_id and not too_long(s.request.seq_id)
                   for s in self.steps if s.request is not None)

    def describe(self) -> str:
        head = (f"corpus entry {self.name} ({self.status}"
                + (f" on Triton {', '.join(self.divergence_versions)}" if self.divergence_versions else "")
                + f"): [{self.invariant}] {self.detail}, recorded on Triton {self.triton_version}\n"
                  f"model {self.spec.describe()}")
        return head + "\nprogram:\n" + "\n".join(program_lines(self.steps))

    # -- serialization -----------------------------------------------------------------------
    def to_json(self) -> dict:
        origin = _origin(self.steps)
        return {
            "format_version": self.format_version,
            "name": self.name,
            "status": self.status,
            "divergence": self.divergence,
            "divergence_versions": list(self.divergence_versions),
            "invariant": self.invariant,
            "detail": self.detail,
            "triton_version": self.triton_version,
            "found": self.found,
            "note": self.note,
            "model": self.model,
            "spec": _spec_to_json(self.spec),
            "steps": [_step_to_json(s, origin) for s in self.steps],
        } | ({"accepts": list(self.accepts)} if self.accepts else {})

    @classmethod
    def from_json(cls, data, path="<memory>") -> "CorpusEntry":
        if not isinstance(data, dict):
            raise CorpusError(path, f"expected a JSON object, got {type(data).__name__}")
        version = data.get("format_version")
        if version not in READS:
            raise CorpusError(path, f"unknown format_version {version!r}; this fuzzer reads versions "
                                    f"{', '.join(map(str, READS))} (written by a newer triton-seqfuzz?)")
        try:
            return cls(
                name=_get(data, "name", str), status=_get(data, "status", str), model=_get(data, "model", str),
                spec=_spec_from_json(_get(data, "spec", dict)), triton_version=_get(data, "triton_version", str),
                invariant=_get(data, "invariant", str), detail=_get(data, "detail", str),
                steps=tuple(_step_from_json(s, i, version) for i, s in enumerate(_get(data, "steps", list))),
                divergence=data.get("divergence"),
                divergence_versions=tuple(_get(data, "divergence_versions", list)),
                found=data.get("found", ""), note=data.get("note", ""),
                accepts=tuple(_get(data, "accepts", list)) if "accepts" in data else ())
        except CorpusError:
            raise
        except (KeyError, TypeError, ValueError) as err:
            raise CorpusError(path, f"{type(err).__name__}: {err}") from None

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"


def _get(data: dict, key: str, typ):
    if key not in data:
        raise KeyError(f"missing field {key!r}")
    value = data[key]
    if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
        raise TypeError(f"field {key!r} must be {typ.__name__}, got {value!r}")
    return value


def _spec_to_json(spec: ModelSpec) -> dict:
    d = attrs.asdict(spec)
    d["controls"] = sorted(spec.controls)
    # unset: entries read as they did before ensembles, decoupled models, initial states and chunks
    for name in ("step", "decoupled", "initial_sum", "chunks"):
        if not d[name]:
            del d[name]
    return d


def _spec_from_json(d: dict) -> ModelSpec:
    fields = {f.name for f in attrs.fields(ModelSpec)}
    unknown = set(d) - fields
    if unknown:
        raise ValueError(f"unknown spec field(s) {sorted(unknown)}")
    return ModelSpec(**{**d, "controls": frozenset(d.get("controls", ()))})


def id_to_json(seq_id) -> dict:
    """uint64 and string ids are different sequences (5 and "5"), so the type is spelled out."""
    if isinstance(seq_id, str):
        return {"type": "string", "value": seq_id}
    return {"type": "uint64", "value": int(seq_id)}


def id_from_json(d) -> int | str:
    if not isinstance(d, dict) or d.get("type") not in ("uint64", "string"):
        raise ValueError(f"an id must be {{'type': 'uint64'|'string', 'value': ...}}, got {d!r}")
    if d["type"] == "string":
        if not isinstance(d["value"], str):
            raise TypeError(f"string id with a non-string value {d['value']!r}")
        return d["value"]
    if not isinstance(d["value"], int) or isinstance(d["value"], bool) or not 0 <= d["value"] < 2**64:
        raise ValueError(f"uint64 id out of range: {d['value']!r}")
    return d["value"]


def _request_to_json(r: Request) -> dict:
    return {"model": r.model, "id": id_to_json(r.seq_id), "value": r.value, "start": r.start, "end": r.end,
            "dtype": r.dtype, "batch": r.batch, "timeout_us": r.timeout_us,
            **({} if r.batch_dim else {"batch_dim": False})}


def _request_from_json(d: dict) -> Request:
    value = d["value"]
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"request value must be a number, got {value!r}")
    return Request(model=d["model"], seq_id=id_from_json(d["id"]), value=value, start=bool(d["start"]),
                   end=bool(d["end"]), dtype=d["dtype"], batch=int(d["batch"]), timeout_us=d.get("timeout_us"),
                   batch_dim=bool(d.get("batch_dim", True)))


def _origin(steps) -> float | None:
    """The time a program's saved step times count from: its first step's send."""
    times = [s.sent_at for s in steps if s.sent_at is not None]
    return min(times) if times else None


def _step_to_json(s: StepRecord, origin: float | None = None) -> dict:
    d = {"index": s.index, "client": s.client, "kind": s.kind.value, "action": s.action,
         "request": _request_to_json(s.request) if s.request is not None else None,
         "via": s.via, "wait_s": s.wait_s, "expected": s.expected, "got": s.got,
         "expect": _expect_to_json(s.expect),
         "outcome": _outcome_to_json(s.outcome) if s.outcome else None}
    if s.answers_behind:  # a cancel's: what each request behind had answered when it went
        d["answers_behind"] = [_outcome_to_json(o) if o is not None else None for o in s.answers_behind]
    if s.fault is not None:
        d["fault"] = {"name": s.fault.name, "graceful": s.fault.graceful, "env": dict(s.fault.env)}
        if s.fault.ids:
            d["fault"].update(ids=list(s.fault.ids), at_once=s.fault.at_once, deadline_us=s.fault.deadline_us,
                              spare_every=s.fault.spare_every)
    if origin is not None and s.sent_at is not None and s.done_at is not None:
        # Its history interval (fuzz/checker/history.py), in seconds from the program's first send, to the µs.
        d["at"] = [round(s.sent_at - origin, 6), round(s.done_at - origin, 6)]
    return d


def _outcome_to_json(o: Outcome) -> dict:
    d = attrs.asdict(o)
    del d["sent_at"]  # a clock reading of the run that saved it: the step keeps its times (`at`)
    del d["execution"]  # and a serial of that run's model
    del d["final_alone"]  # and how the model sent its final flag
    if not o.partials:  # only an iterative START's and a split ensemble's answers have them: other entries read as before
        del d["partials"]
    for said in ("live_rows", "row", "shape", "datatype"):  # only a model that says its live rows (and rows)
        if d[said] is None:                                 # gives them; entries saved before forms were read have none
            del d[said]
        elif said == "shape":
            d[said] = list(d[said])
    return d


def _expect_to_json(e) -> dict | None:
    """An expectation as {"answer": value} / {"queued": value} (each with "partials": [values]
    when it answers more than once) / {"cancelled": true} / {"ended_or": [values]} /
    {"any_order": [values]} / {"refusal": {"status", "message", "invariant"}}."""
    if isinstance(e, (Answer, Queued)):
        d = {"answer" if isinstance(e, Answer) else "queued": e.value}
        return d | ({"partials": list(e.partials)} if e.partials else {})
    if isinstance(e, Cancelled):
        return {"cancelled": True}
    if isinstance(e, EndedOr):
        return {"ended_or": list(e.values)}
    if isinstance(e, AnyOrder):
        return {"any_order": list(e.values)}
    if isinstance(e, Refusal):
        return {"refusal": attrs.asdict(e)}
    return None


def _expect_from_json(d):
    if d is None:
        return None
    # an answer's or a queued START's partials are the one key beside the kind
    kinds = [k for k in d if k != "partials" or not {"answer", "queued"} & set(d)] if isinstance(d, dict) else []
    if len(kinds) != 1:
        raise ValueError(f"an expectation is one of answer, queued, cancelled, ended_or, any_order, refusal; got {d!r}")
    what, value, partials = kinds[0], d[kinds[0]], d.get("partials", [])
    if what in ("ended_or", "any_order"):
        _numbers(what, value)
        return EndedOr(value) if what == "ended_or" else AnyOrder(value)
    if what in ("answer", "queued"):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"{what} must be a number, got {value!r}")
        _numbers("partials", partials)
        return (Answer if what == "answer" else Queued)(value, partials=partials)
    if what == "cancelled":
        return Cancelled()
    if what == "refusal":
        return Refusal(str(value["status"]), str(value["message"]), str(value["invariant"]))
    raise ValueError(f"unknown expectation {what!r}")


def _numbers(what: str, value) -> None:
    if not isinstance(value, list) or any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in value):
        raise TypeError(f"{what} must be a list of numbers, got {value!r}")


def _outcome_from_json(d) -> Outcome | None:
    if d is None:
        return None
    return Outcome(value=d.get("value"), status=str(d.get("status", "OK")), message=str(d.get("message", "")),
                   latency_s=float(d.get("latency_s", 0.0)), partials=d.get("partials", ()),
                   live_rows=None if d.get("live_rows") is None else int(d["live_rows"]),
                   row=None if d.get("row") is None else int(d["row"]), shape=d.get("shape"),
                   datatype=d.get("datatype"))


def _answers_from_json(d) -> tuple:
    if not isinstance(d, list):
        raise TypeError(f"answers_behind must be a list of outcomes (or null), got {d!r}")
    return tuple(_outcome_from_json(o) for o in d)


def _fault_from_json(d) -> Fault | None:
    if d is None:
        return None
    return Fault(str(d["name"]), graceful=bool(d.get("graceful", False)),
                 env=tuple(sorted((str(k), str(v)) for k, v in dict(d.get("env", {})).items())),
                 ids=tuple(d.get("ids", ())), at_once=int(d.get("at_once", 0)), deadline_us=int(d.get("deadline_us", 0)),
                 spare_every=int(d.get("spare_every", 0)))


def _step_from_json(d, i: int, version: int = FORMAT_VERSION) -> StepRecord:
    if not isinstance(d, dict):
        raise TypeError(f"step {i + 1} must be an object, got {d!r}")
    try:
        request = _request_from_json(d["request"]) if d.get("request") is not None else None
        got, expected = d.get("got", ""), d.get("expected", "")
        kind = Kind(d["kind"]) if version >= 2 else _kind_of_v1(str(d["action"]), request, got)
        expect = _expect_from_json(d["expect"]) if "expect" in d else _expect_of_text(kind, expected)
        return StepRecord(index=int(d["index"]), client=d["client"], action=str(d["action"]), kind=kind,
                          fault=_fault_from_json(d.get("fault")),
                          request=request, via=d.get("via", ""), wait_s=float(d.get("wait_s", 0.0)),
                          expected=expected, got=got, expect=expect, outcome=_outcome_from_json(d.get("outcome")),
                          answers_behind=_answers_from_json(d.get("answers_behind", [])),
                          **_times_from_json(d.get("at")))
    except (KeyError, TypeError, ValueError) as err:
        raise type(err)(f"step {i + 1}: {err}") from None


def _times_from_json(at) -> dict:
    """A step's saved times (absent in entries saved before histories kept them)."""
    if at is None:
        return {}
    if not (isinstance(at, list) and len(at) == 2 and all(isinstance(t, (int, float)) for t in at)
            and at[0] <= at[1]):
        raise ValueError(f"at must be [sent, done] seconds with sent <= done, got {at!r}")
    return {"sent_at": float(at[0]), "done_at": float(at[1])}


def _kind_of_v1(action: str, request, got: str) -> Kind:
    """A format 1 step's kind, from the text the fuzzer of then wrote for it."""
    if action == "pause":
        return Kind.PAUSE
    if action == "go silent past the idle timeout":
        return Kind.GO_SILENT
    if action.startswith("leave ") and request is None:
        return Kind.LEAVE_TO_EXPIRE
    if action == "close its stream":
        return Kind.CLOSE_STREAM
    if action.startswith("cancel its queued START"):
        return Kind.CANCEL_QUEUED
    if action.startswith("answer to step"):
        return Kind.ANSWER
    if action == "still waiting":
        return Kind.STILL_WAITING
    if request is None:
        return Kind.FAULT
    if got == "(waiting)":
        return Kind.QUEUED
    return Kind.REFILL if action == "start after timeout" else Kind.REQUEST


def _expect_of_text(kind: Kind, expected: str):
    """The expectation of a step written before steps kept it as a value (format 1, and format 2
    until the expectation was added), from its text: the one other place that text is read."""
    if kind is Kind.CANCEL_QUEUED:
        return Cancelled()
    if kind not in (Kind.REQUEST, Kind.REFILL, Kind.QUEUED, Kind.ANSWER, Kind.STILL_WAITING) or not expected:
        return None
    queued = expected.startswith("queued in the backlog, then ")
    text = expected.removeprefix("queued in the backlog, then ")
    if text.startswith("OUTPUT="):
        number = text.removeprefix("OUTPUT=")
        value = int(number) if number.lstrip("-").isdigit() else float(number)
        return Queued(value) if queued else Answer(value)
    status, _, message = text.partition(": ")
    return Refusal(status, message, "")


# -- files ---------------------------------------------------------------------------------------

def load(path) -> CorpusEntry:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise CorpusError(path, f"cannot read it: {err}") from None
    except json.JSONDecodeError as err:
        raise CorpusError(path, f"not valid JSON: {err}") from None
    entry = CorpusEntry.from_json(data, path)
    if entry.name != path.stem:
        raise CorpusError(path, f"its name field {entry.name!r} does not match the file name")
    return entry


@attrs.frozen
class Loaded:
    """One corpus file: its entry, or why it cannot be used."""
    path: Path
    entry: CorpusEntry | None = None
    error: CorpusError | None = None

    @property
    def name(self) -> str:
        return self.path.stem


def load_dir(directory) -> list[Loaded]:
    """Every *.json in the directory, sorted; a bad file becomes a Loaded with its error."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    out = []
    for path in sorted(directory.glob("*.json")):
        try:
            out.append(Loaded(path, entry=load(path)))
        except CorpusError as err:
            out.append(Loaded(path, error=err))
    return out


def entry_name(model: str, invariant: str, steps) -> str:
    """Stable for the same program (the requests and who sent them how), whatever the timing."""
    shape = [[s.client, s.action, _request_to_json(s.request) if s.request else None, s.via] for s in steps]
    digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:10]
    return f"{model}--{invariant}--{digest}"


def make_entry(spec: ModelSpec, version: str, invariant: str, detail: str, steps, *,
               divergence: str | None = None, note: str = "", accepts: tuple = ()) -> CorpusEntry:
    steps = tuple(steps)
    return CorpusEntry(
        name=entry_name(spec.name, invariant, steps),
        status="known-divergence" if divergence else "new", model=spec.name, spec=spec,
        triton_version=version, invariant=invariant, detail=detail, steps=steps, divergence=divergence,
        divergence_versions=(version,) if divergence else (),
        found=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), note=note,
        accepts=tuple(accepts))


def write(directory, entry: CorpusEntry) -> Path:
    """Writes NAME.json, its reproducer NAME.py and (if missing or stale) the reproducers' shared
    runtime, each atomically (tmp + os.replace)."""
    from .reproducer import RUNTIME_NAME, render, runtime

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{entry.name}.json"
    atomic_write(target, entry.dumps())
    shared, text = directory / RUNTIME_NAME, runtime()
    if not shared.is_file() or shared.read_text(encoding="utf-8") != text:
        atomic_write(shared, text)
    atomic_write(directory / f"{entry.name}.py", render(entry), mode=0o755)
    return target


def already_covered(directory, entry: CorpusEntry) -> Path | None:
    """An existing file that holds the same finding: the same program, or (for a known
    divergence) any entry of the same model and divergence. Returns its path, or None."""
    for loaded in load_dir(directory):
        e = loaded.entry
        if loaded.name == entry.name:
            return loaded.path
        if e is not None and entry.divergence and e.model == entry.model and e.divergence == entry.divergence:
            return loaded.path
    return None


def record(directory, entry: CorpusEntry) -> tuple[Path, bool]:
    """Writes the entry unless the corpus already holds the finding. Returns (path, written)."""
    existing = already_covered(directory, entry)
    if existing is not None:
        return existing, False
    return write(directory, entry), True
