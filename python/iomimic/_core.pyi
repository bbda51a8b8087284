"""Types of the compiled core, ``iomimic._core`` (crates/iomimic-py). Checked against the
module by tests/test_core_stubs.py: every name here exists there with these parameters, and the
results' keys are the ones declared.

Conventions (crates/iomimic-py/src/boundary.rs): traces cross as numpy columns in a dict
(:class:`Columns` in, :class:`TraceColumns` out); every result crosses as plain data built from
the core's serde structs (the ``...Dict`` types below); options cross as strings and are parsed
once, errors naming the parameter in backquotes.
"""

from collections.abc import Callable, Sequence
from typing import Any, NotRequired, Protocol, Required, TypedDict

import numpy as np
import numpy.typing as npt

LATENCY_UNKNOWN: int
STATUS_OK: int
SLICE_REQUESTS: int

class IomimicError(Exception): ...
class InputError(IomimicError): ...

class TraceParseError(InputError):
    path: str
    line: int
    key: str

class UnknownFormatError(InputError): ...
class EmptyTraceError(InputError): ...

class Columns(Protocol):
    """A trace's columns by attribute (``iomimic.trace._Columns``)."""

    ts_ns: npt.NDArray[np.uint64]
    offset: npt.NDArray[np.uint64]
    size: npt.NDArray[np.uint32]
    op: npt.NDArray[np.uint8]
    volume: npt.NDArray[np.uint32]
    stream: npt.NDArray[np.uint32]
    latency_ns: npt.NDArray[np.uint64] | None
    file: npt.NDArray[np.uint32] | None
    status: npt.NDArray[np.uint8] | None

class TraceColumns(TypedDict):
    ts_ns: npt.NDArray[np.uint64]
    offset: npt.NDArray[np.uint64]
    size: npt.NDArray[np.uint32]
    op: npt.NDArray[np.uint8]
    volume: npt.NDArray[np.uint32]
    stream: npt.NDArray[np.uint32]
    latency_ns: npt.NDArray[np.uint64] | None
    file: npt.NDArray[np.uint32] | None
    status: npt.NDArray[np.uint8] | None
    volumes: list[str]
    files: list[str]

class SliceColumns(TraceColumns):
    """A slice of a generation: its times are less ``start_ns``."""

    start_ns: int

class ReadReportDict(TypedDict):
    path: str
    format: str | None
    compression: str | None
    records: int
    requests: int
    out_of_order: int
    start_ns: int
    skipped: list[tuple[str, int]]
    skipped_examples: list[str]
    ignored: list[tuple[str, int]]
    notes: list[str]
    stream_names: dict[int, str]
    latency_phases: list[tuple[str, LatencyUsDict]]

class LatencyUsDict(TypedDict):
    """The one latency object (``iomimic_core::latency::LatencyUs``): count, mean and
    percentiles, all in µs."""

    count: int
    mean: float
    p50: float
    p90: float
    p95: float
    p99: float
    p999: float
    max: float

class ReadTrace(TraceColumns):
    report: ReadReportDict

class OpLatencyDict(TypedDict):
    """One operation's response times, in a ``by_op`` map."""

    latency_us: LatencyUsDict

class VolumeCountDict(TypedDict):
    id: int
    name: str
    requests: int

class SummaryDict(TypedDict):
    requests: int
    reads: int
    writes: int
    trims: int
    flushes: int
    volumes: list[VolumeCountDict]
    streams: int
    span_s: float
    bytes_read: int
    bytes_written: int
    has_latency: bool
    failed: dict[str, int] | None

class MrcDict(TypedDict):
    """An LRU miss-ratio curve over 4 KiB blocks (docs/characterize.md)."""

    block_bytes: int
    accesses: int
    cold_misses: int
    footprint_bytes: int
    curve: list[dict[str, Any]]
    reuse_histogram: list[dict[str, Any]]
    sampling_rate: float
    sampling_error: float

class ProfileDict(TypedDict):
    """Every characterization figure (docs/characterize.md); the whole trace's figures at the
    top level, with ``volumes`` and ``streams`` holding the same figures per group."""

    format_version: int
    options: dict[str, Any]
    requests: int
    reads: int
    writes: int
    trims: int
    flushes: int
    read_fraction: float
    bytes_read: int
    bytes_written: int
    duration_s: float
    iops: float
    mb_per_s: float
    interarrival: dict[str, Any]
    size: dict[str, Any]
    sequential_fraction: float
    sequentiality: dict[str, Any]
    spatial: dict[str, Any]
    fluctuation: dict[str, Any]
    latency_us: LatencyUsDict | None
    latency_cv: float | None
    by_op: dict[str, OpLatencyDict]
    mrc: MrcDict | None
    volumes: dict[str, dict[str, Any]]
    streams: dict[str, dict[str, Any]]
    threads: list[dict[str, Any]] | None
    thread_thresholds: dict[str, Any] | None
    peak_correlation: dict[str, Any] | None

class ValidationRowDict(TypedDict, total=False):
    metric: str
    kind: str
    original: float
    synthetic: float
    variation: float | None
    target: float | None
    ok: bool | None
    original_shown: str | None
    synthetic_shown: str | None
    baseline: float
    baseline_variation: float | None
    baseline_ok: bool | None

class ValidationDict(TypedDict, total=False):
    rows: list[ValidationRowDict]
    original: dict[str, Any]
    synthetic: dict[str, Any]
    baseline: dict[str, Any]
    baseline_kind: str
    curves: dict[str, Any]
    iops_over_time: dict[str, Any]
    spatial: dict[str, list[float]]
    iops_per_second: dict[str, Any]
    request_curves: dict[str, Any]
    passed: int
    checked: int
    baseline_passed: int | None

class SimFiguresDict(TypedDict, total=False):
    device: str
    mode: str
    requests: int
    duration_s: float
    iops: float
    mb_per_s: float
    latency_us: LatencyUsDict | None
    mean_service_us: float
    device_ios: int
    devices: list[dict[str, Any]]
    energy_j: float | None
    by_op: dict[str, OpLatencyDict]
    cache_hits: int
    # requests whose offset lay past their volume's region of the device, and that region
    folded_requests: int
    region_bytes: int
    slow_ios: int
    failed_ios: int
    # each device kind's own counters, summed over the array (a disk's, an SSD's)
    buffer_hits: int
    spin_ups: int
    destages: int
    flash_reads: int
    flash_programs: int
    gc_page_moves: int
    gc_erases: int
    cache_read_hits: int
    partial_page_rewrites: int
    write_buffer_waits: int
    # an SSD's gauges, averaged over the array
    die_utilization: float
    channel_utilization: float
    host_utilization: float
    write_amplification: float

class SimResult(TypedDict):
    latency_ns: npt.NDArray[np.uint64]
    issue_ns: npt.NDArray[np.uint64]
    status: npt.NDArray[np.uint8]
    figures: SimFiguresDict

class PlacedDict(SimFiguresDict, total=False):
    """One device's figures, and the volumes it served."""

    volumes: list[str]

class MappedFiguresDict(TypedDict):
    """Volumes on several devices: the whole run's figures, then each device's."""

    device: str
    mode: str
    requests: int
    duration_s: float
    iops: float
    mb_per_s: float
    latency_us: LatencyUsDict | None
    by_op: dict[str, OpLatencyDict]
    energy_j: float | None
    placements: list[PlacedDict]

class MappedSimResult(TypedDict):
    latency_ns: npt.NDArray[np.uint64]
    issue_ns: npt.NDArray[np.uint64]
    status: npt.NDArray[np.uint8]
    figures: MappedFiguresDict

class PresetDict(TypedDict):
    name: str
    description: str
    references: list[str]
    iops: float
    duration_s: float
    assumptions: list[str]
    volumes: list[dict[str, Any]]
    threads: list[dict[str, Any]]
    published: dict[str, Any]

class RunPiece(TypedDict):
    issue_ns: npt.NDArray[np.uint64]
    latency_ns: npt.NDArray[np.uint64]
    lag_ns: npt.NDArray[np.uint64]
    offset: npt.NDArray[np.uint64]
    size: npt.NDArray[np.uint32]
    ran: npt.NDArray[np.bool_]
    status: npt.NDArray[np.uint8]
    over: bool

class FailedDict(TypedDict):
    requests: int
    by_errno: dict[str, int]
    first: list[str]

class FoldDict(TypedDict):
    path: str
    reach_bytes: int
    size_bytes: int
    factor: float

class RunFiguresDict(TypedDict, total=False):
    engine: str
    mode: str
    requests: int
    completed: int
    partial: bool
    folded: list[FoldDict]
    failed: FailedDict
    ramp_s: float
    warmup_requests: int
    elapsed_s: float
    iops: float
    mb_per_s: float
    latency_us: LatencyUsDict | None
    by_op: dict[str, dict[str, Any]]
    time_limited: bool
    cpu_us_per_io: float
    over_time: dict[str, Any]
    submission: str
    verify: dict[str, Any]
    scheduled_iops: float | None
    lag_us: LatencyUsDict | None
    last_request_lag_us: float | None

class TraceReader:
    def __init__(
        self,
        path: str,
        format: str | None = None,
        skip_bad: bool = False,
        time_unit: str | None = None,
        event: str | None = None,
        columns: str | None = None,
        delimiter: str | None = None,
    ) -> None: ...
    @property
    def format(self) -> str: ...
    def progress(self) -> tuple[int, int]: ...
    def read_some(self, max_rows: int) -> bool: ...
    def finish(self) -> ReadTrace: ...
    def count_some(self, max_rows: int) -> bool: ...
    def take_rows(self, count: bool = True) -> ReadTrace: ...
    def end_parse(self) -> None: ...
    @property
    def pending(self) -> int: ...
    def finish_summary(self) -> tuple[SummaryDict, dict[str, Any]]: ...

def merge_traces(
    parts: Sequence[tuple[Columns, Sequence[str], Sequence[str], int, str | None]],
) -> TraceColumns: ...
def validate(columns: Columns, volumes: Sequence[str], files: Sequence[str]) -> None: ...
def write_csv(
    path: str,
    columns: Columns,
    volumes: Sequence[str],
    files: Sequence[str],
    gzip: bool = False,
    append: bool = False,
) -> None: ...
def summarize(columns: Columns, volumes: Sequence[str], files: Sequence[str]) -> SummaryDict: ...

class SummaryParts:
    """Summaries of a trace's parts (row groups, read on every core) added up as they come."""
    def __init__(self) -> None: ...
    def add(
        self, columns: Columns, volumes: Sequence[str], files: Sequence[str], has_latency: bool = False
    ) -> bool: ...
    @property
    def start_ns(self) -> int | None: ...
    def finish(self, volumes: Sequence[str]) -> SummaryDict: ...

def format_table() -> list[tuple[str, str]]: ...
def characterize(
    columns: Columns,
    volumes: Sequence[str],
    files: Sequence[str],
    ranges: int = 4,
    window_ns: int | None = None,
    by: str | None = None,
    mrc: str = "all",
    mrc_sampling: float | None = None,
    mrc_budget: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ProfileDict: ...

class OverTimeDict(TypedDict):
    bin_ns: int
    read_iops: list[float]
    write_iops: list[float]
    mb_per_s: list[float]

class ScatterDict(TypedDict):
    every: int
    t_s: list[float]
    offset: list[int]
    op: list[int]
    volume: list[int]

class HeatDict(TypedDict):
    time_bins: int
    position_bins: int
    counts: list[int]

class SizeBarDict(TypedDict):
    bytes: int
    reads: int
    writes: int

class GapBinDict(TypedDict):
    from_us: float
    to_us: float
    count: int

class PlotDataDict(TypedDict):
    """What the report draws (``iomimic_core::analyze::plot_data``)."""

    requests: int
    span_s: float
    over_time: OverTimeDict
    scatter: ScatterDict
    heat: HeatDict
    sizes: list[SizeBarDict]
    other_sizes: int
    interarrival: list[GapBinDict]

def plot_data(
    columns: Columns, volumes: Sequence[str], files: Sequence[str], bin_ns: int | None = None
) -> PlotDataDict: ...
def validate_traces(
    original: Columns,
    original_names: tuple[Sequence[str], Sequence[str]],
    synthetic: Columns,
    synthetic_names: tuple[Sequence[str], Sequence[str]],
    ranges: int = 4,
    baseline: str | None = None,
    seed: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> ValidationDict: ...

class Model:
    @staticmethod
    def from_json(text: str) -> Model: ...
    def to_json(self) -> str: ...
    @property
    def data(self) -> dict[str, Any]: ...
    @property
    def name(self) -> str: ...
    def generate(
        self, options: GenerateOptions, progress: Callable[[int, int], None] | None = None
    ) -> TraceColumns: ...
    def generation(self, options: GenerateOptions) -> Generation: ...

class GenerateOptions(TypedDict, total=False):
    """Generation's options: the seed, and any of the others (the rest at their defaults)."""

    requests: int | None
    duration_ns: int | None
    intensity: float
    seed: Required[int]
    reuse: bool
    slice: int | None

class Generation:
    """A generation cut into slices of consecutive time, each made when asked for."""
    def __len__(self) -> int: ...
    @property
    def requests(self) -> int: ...
    def slice(
        self,
        s: int,
        start_ns: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> SliceColumns: ...

class TrainOptions(TypedDict, total=False):
    """Training's options: the seed, and any of the others (the rest at their defaults)."""

    levels: int | None
    states: int | None
    by_stream: bool | None
    reuse: bool
    name: str | None
    source: str | None
    seed: Required[int]
    simulate_on: tuple[str, int] | None

def train_model(
    columns: Columns,
    volumes: Sequence[str],
    files: Sequence[str],
    options: TrainOptions,
    progress: Callable[[int, int], None] | None = None,
) -> Model: ...

class TrainPlan:
    """Training's shared steps; each thread is trained by ``train_part`` wherever it runs."""
    @property
    def shared(self) -> str: ...
    @property
    def sizes(self) -> list[int]: ...
    def thread_trace(
        self, i: int, columns: Columns, volumes: Sequence[str], files: Sequence[str]
    ) -> tuple[TraceColumns, np.ndarray]: ...
    def assemble(self, parts: Sequence[str]) -> Model: ...

def train_plan(
    columns: Columns,
    volumes: Sequence[str],
    files: Sequence[str],
    options: TrainOptions,
    progress: Callable[[int, int], None] | None = None,
) -> TrainPlan: ...
def train_part(
    columns: Columns, volumes: Sequence[str], files: Sequence[str], model_times: np.ndarray, shared: str
) -> str: ...

class TrainStream:
    """Training fed a trace a piece at a time, in time order: every piece of each of ``PASSES``
    passes, each pass ended by ``end_pass``, which gives the model after the last."""

    PASSES: int
    def __init__(
        self,
        volumes: Sequence[str],
        files: Sequence[str],
        options: TrainOptions,
        threads: Sequence[int] | None = None,
    ) -> None: ...
    @property
    def current_pass(self) -> int: ...
    @property
    def threads(self) -> list[tuple[str, int]] | None: ...
    @staticmethod
    def resume(
        volumes: Sequence[str],
        files: Sequence[str],
        options: TrainOptions,
        clocked: str,
        threads: Sequence[int] | None = None,
    ) -> TrainStream: ...
    def clocked(self) -> str: ...
    def parts(self) -> list[tuple[int, str]]: ...
    def assemble(self, parts: Sequence[tuple[int, str]]) -> Model: ...
    def feed(self, columns: Columns, volumes: Sequence[str], files: Sequence[str]) -> None: ...
    def end_pass(self, progress: Callable[[int, int], None] | None = None) -> Model | None: ...

def mix_models(parts: Sequence[tuple[Model, float]], name: str) -> Model: ...
def model_presets() -> list[str]: ...
def preset_model(name: str) -> Model: ...
def preset_info(name: str) -> PresetDict: ...
def pattern_trace(spec: str, requests: int, span: int | None = None, seed: int = 1) -> TraceColumns: ...
def pattern_requests(spec: str, duration_ns: int, intensity: float) -> int: ...
def parse_pattern(spec: str) -> tuple[int, bool, int, int, bool, int | None, float | None]: ...
def generate_locality_free(
    columns: Columns, volumes: Sequence[str], files: Sequence[str], requests: int, seed: int
) -> TraceColumns: ...
def cache_replay(
    policy: str, capacity: int, keys: npt.NDArray[np.uint64], sizes: npt.NDArray[np.uint32]
) -> tuple[int, int]: ...
def cache_policies() -> list[tuple[str, str]]: ...

class ChunkedProfile:
    """A characterization of a trace read a piece at a time: every piece to `survey`, then
    `start`, then every piece again to `add`, in the same order; `finish` gives the profile.
    By partitions: each partition's `surveyed` to `take_survey`, then `start`, then each
    partition's counts (`ChunkedPartition`, from `setup`) to `absorb`, in time order."""
    def __init__(
        self,
        memory: int,
        ranges: int = 4,
        window_ns: int | None = None,
        by: str | None = None,
        mrc: str = "all",
        mrc_sampling: float | None = None,
        mrc_budget: int | None = None,
    ) -> None: ...
    def survey(
        self, columns: Columns, volumes: Sequence[str], files: Sequence[str], in_order: bool = True
    ) -> None: ...
    def surveyed(self) -> bytes: ...
    def take_survey(self, survey_bytes: bytes) -> bool: ...
    def start(self, volumes: Sequence[str]) -> None: ...
    def add(self, columns: Columns, volumes: Sequence[str], files: Sequence[str]) -> None: ...
    def setup(self) -> str: ...
    def absorb(self, part: bytes) -> bool: ...
    def redo(self, columns: Columns, volumes: Sequence[str], files: Sequence[str]) -> None: ...
    def redone(self) -> None: ...
    def finish(self) -> ProfileDict: ...

class ChunkedPartition:
    """One partition of a trace (a range of its time, `share` of its requests) counted on its
    own from a `ChunkedProfile`'s `setup`; `finish` gives its counts for `ChunkedProfile.absorb`."""
    def __init__(self, setup: str, share: float) -> None: ...
    def add(self, columns: Columns, volumes: Sequence[str], files: Sequence[str]) -> None: ...
    def finish(self) -> bytes: ...

def miss_ratio_curve(
    columns: Columns,
    volumes: Sequence[str],
    files: Sequence[str],
    budget: int | None = None,
    sampling: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MrcDict: ...
def simulate(
    columns: Columns,
    volumes: Sequence[str],
    files: Sequence[str],
    config_toml: str,
    iodepth: int | None = None,
    intensity: float = 1.0,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SimResult: ...
def simulate_mapped(
    columns: Columns,
    volumes: Sequence[str],
    files: Sequence[str],
    placements: Sequence[tuple[str, Sequence[int]]],
    iodepth: int | None = None,
    intensity: float = 1.0,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MappedSimResult: ...

class SimStream:
    """A simulation fed a trace a piece at a time, in time order (one device or placements)."""
    def __init__(
        self,
        volumes: Sequence[str],
        config_toml: str | None = None,
        placements: Sequence[tuple[str, Sequence[int]]] | None = None,
        iodepth: int | None = None,
        intensity: float = 1.0,
        scheduler: str | None = None,
    ) -> None: ...
    def feed(
        self, columns: Columns, volumes: Sequence[str], files: Sequence[str]
    ) -> dict[str, np.ndarray]: ...
    def finish(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]: ...

def device_presets() -> list[tuple[str, str]]: ...
def device_table() -> list[tuple[str, str, str, str]]: ...
def check_device(config_toml: str) -> dict[str, Any]: ...
def study_table() -> list[tuple[str, str]]: ...
def run_study(
    name: str,
    columns: Columns,
    volumes: Sequence[str],
    files: Sequence[str],
    options: str,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]: ...
def study_points(name: str, options: str) -> list[str] | None: ...
def join_study(name: str, options: str, reports: Sequence[str]) -> dict[str, Any]: ...
def run_study_alone(
    name: str, options: str, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]: ...
def fleet_workload(
    columns: Columns, volumes: Sequence[str], files: Sequence[str], devices: int, intensity: float
) -> TraceColumns: ...
def judge_fleet(
    columns: Columns,
    volumes: Sequence[str],
    files: Sequence[str],
    intensity: float,
    checkpoints: int,
    rule: str,
) -> dict[str, Any]: ...

class OffloadStoreSetDict(TypedDict):
    layout: int
    client_id: int
    block_bytes: int
    stores: list[str]
    policy: dict[str, Any]
    overwrite: bool
    allow_device: bool
    least_replicas: NotRequired[int]
    retired: NotRequired[list[int]]

class OffloadStoreUsageDict(TypedDict):
    area_bytes: int
    used_bytes: int
    live_blocks: int
    records: int
    head: int
    tail: int

class OffloadStoreDict(TypedDict):
    name: str
    state: str
    usage: OffloadStoreUsageDict | None
    client_blocks: int

class OffloadCountersDict(TypedDict):
    base_writes: int
    offloaded_writes: int
    written_through: int
    reads: int
    reads_from_stores: int
    reclaimed_blocks: int
    store_failures: int

class OffloadStatusDict(TypedDict):
    client_id: int
    block_bytes: int
    base_bytes: int
    offloaded_blocks: int
    extents: list[tuple[int, int, int]]
    stores: list[OffloadStoreDict]
    counters: OffloadCountersDict
    notes: list[str]

def offload_init(
    base: str,
    stores: Sequence[str],
    store_bytes: int,
    base_bytes: int | None,
    block_bytes: int,
    policy_json: str,
    overwrite: bool,
    allow_device: bool,
) -> OffloadStoreSetDict: ...
def offload_store_set(base: str) -> OffloadStoreSetDict: ...

class OffloadClient:
    def __init__(
        self, base: str, policy_json: str | None = None, accept_loss: bool = False, read_only: bool = False
    ) -> None: ...
    def readmit(self, store: int) -> None: ...
    def write(self, offset: int, data: bytes) -> None: ...
    def read(self, offset: int, length: int) -> bytes: ...
    def reclaim_step(self) -> int | None: ...
    def reclaim_all(self) -> int: ...
    def status(self) -> OffloadStatusDict: ...

class RunSession:
    def __init__(
        self,
        paths: Sequence[str],
        needed: Sequence[int],
        write: bool,
        direct: bool,
        size: int | None = None,
        allow_device: bool = False,
        overwrite: bool = False,
        engine: str = "auto",
        iodepth: int | None = None,
        workers: int = 16,
        intensity: float = 1.0,
        no_stall: bool = False,
        sqpoll: bool = True,
        align: int = 1,
        deadline_ns: int | None = None,
        ramp_ns: int = 0,
        verify: bool = False,
        record: bool = True,
    ) -> None: ...
    def run_piece(
        self,
        columns: Columns,
        volumes: Sequence[str],
        files: Sequence[str],
        progress: Callable[[int, float, float | None], object] | None = None,
    ) -> RunPiece: ...
    def folded(self) -> list[FoldDict]: ...
    def finish(self, requests: int, span_ns: int) -> RunFiguresDict: ...

def place_requests(
    offset: npt.NDArray[np.uint64],
    size: npt.NDArray[np.uint32],
    volume: npt.NDArray[np.uint32],
    target_sizes: Sequence[int],
    align: int,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]]: ...
def io_uring_available() -> bool: ...
def engine_name(name: str) -> str: ...
def prepare_target(
    path: str,
    needed: int,
    write: bool,
    size: int | None = None,
    allow_device: bool = False,
    overwrite: bool = False,
) -> tuple[int, bool]: ...
def parse_duration_ns(text: str, what: str = "duration") -> int: ...
def parse_size_bytes(text: str, what: str = "size") -> int: ...
