"""The server benchmark's Markdown report: tables, verdicts against the target, notes."""

from __future__ import annotations

import os
from collections.abc import Iterator

from bench.srv_common import (
    NO_ROLLUPS,
    READ_TARGET,
    RECENT,
    SHAPE_NAMES,
    SHAPE_TARGETS,
    WRITERS,
    Cell,
    Outcome,
    Plan,
)
from bench.workload import text_lengths

CORES = os.cpu_count() or 1


def _raw_cell(out: Outcome, cell: Cell) -> Cell | None:
    return next(
        (c for c in out.cells if c.is_raw and c.writers == cell.writers and c.mode == cell.mode),
        None,
    )


def _ratio(value: float | None, base: float | None) -> str:
    if value is None or not base:
        return "-"
    return f"{100 * value / base:.0f}%"


def _percent(value: float) -> str:
    return f"{value:.0f}%" if value >= 10 else f"{value:.1f}%" if value >= 0.1 else f"{value:.2f}%"


def _rate(cell: Cell) -> str:
    if cell.error:
        return f"failed ({cell.error[:80]})"
    return f"{cell.rate:,.0f}" if cell.rate is not None else "-"


def _cpu_bound(cell: Cell) -> float | None:
    """The rate the machine's cores would allow if the run's CPU per append were all."""
    client, server = cell.client_us(), cell.server_us()
    if client is None or server is None or not client + server[0]:
        return None
    return CORES * 1e6 / (client + server[0])


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _append_table(out: Outcome) -> Iterator[str]:
    names = sorted({name for cell in out.cells for name in cell.events})
    yield (
        "| library | writers | appends/s | CPU bound /s | % of raw | per-block range /s "
        "| client CPU | client CPU µs/append | server CPU µs/append | of which background µs "
        "| messages per session at end |" + "".join(f" server {name} |" for name in names)
    )
    yield "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(names)
    local = out.backend.cpu_problem is None
    for cell in out.cells:
        raw = _raw_cell(out, cell)
        share = "—" if cell.is_raw else _ratio(cell.rate, raw.rate if raw else None)
        server = cell.server_us() if local else None
        bound = _cpu_bound(cell) if local else None
        yield (
            f"| {cell.label} | {SHAPE_NAMES[cell.mode]} | {_rate(cell)} | {_us(bound)} "
            f"| {share} | {cell.spread()} | {cell.cpu_share()} | {_us(cell.client_us())} "
            f"| {_us(server[0] if server else None)} | {_us(server[1] if server else None)} "
            f"| {sum(cell.counts) // (cell.writers if cell.mode == 'distinct' else 1):,} |"
            + "".join(f" {cell.events.get(name, 0):,} |" for name in names)
        )
    if not local:
        yield ""
        yield f"Server CPU not measured: {out.backend.cpu_problem}."


def _read_table(out: Outcome, depth: int) -> Iterator[str]:
    raw = next((c for c in out.reads if c.is_raw), None)
    yield f"| library | median µs at depth {depth:,} | p90 µs | n | raw's time over this |"
    yield "|---|---:|---:|---:|---:|"
    for cell in out.reads:
        value = cell.median_us
        if value is None:
            yield f"| {cell.label} | {cell.error or 'no sample'} | | | |"
            continue
        p90 = sorted(cell.samples)[int(0.9 * (len(cell.samples) - 1))] * 1e6
        base = raw.median_us if raw else None
        share = "—" if cell.is_raw or base is None else _percent(100 * base / value)
        yield f"| {cell.label} | {value:,.0f} | {p90:,.0f} | {len(cell.samples)} | {share} |"


def verdicts(outcomes: list[Outcome]) -> list[str]:
    lines = []
    for out in outcomes:
        if out.status != "ok":
            lines.append(f"- **SKIP** {out.backend.title}: {out.status} ({out.reason})")
            continue
        for cell in out.cells:
            if cell.is_raw:
                continue
            raw = _raw_cell(out, cell)
            goal = (
                f"{out.backend.title}, {cell.label}, {SHAPE_NAMES[cell.mode]}: append rate ≥ "
                f"{SHAPE_TARGETS[cell.mode]:.0f}% of {raw.label if raw else 'raw'}"
            )
            if cell.rate is None or raw is None or not raw.rate:
                lines.append(f"- **SKIP** {goal}: not measured")
                continue
            share = 100 * cell.rate / raw.rate
            verdict = _verdict(share, SHAPE_TARGETS[cell.mode])
            why = _why(out, cell, raw) if verdict == "FAIL" else ""
            lines.append(
                f"- **{verdict}** {goal}: {share:.0f}% ({cell.rate:,.0f} vs {raw.rate:,.0f}/s){why}"
            )
        lines += _read_verdicts(out)
    return lines


def _verdict(share: float, target: float) -> str:
    return "PASS" if share >= target else "FAIL"


PIECES = "The server's CPU of an append, piece by piece"


def _why(out: Outcome, cell: Cell, raw: Cell) -> str:
    """Where a short append row's time goes, from the CPU its blocks measured beside raw's."""
    client, raw_client = cell.client_us() or 0.0, raw.client_us() or 0.0
    server, raw_server = cell.server_us(), raw.server_us()
    if out.backend.cpu_problem is not None or server is None or raw_server is None:
        return (
            f". CPU per append: client {client:,.0f} µs vs raw {raw_client:,.0f}; server not "
            f"measured ({out.backend.cpu_problem or 'no blocks'})"
        )
    mine, base = client + server[0], raw_client + raw_server[0]
    bound, raw_bound = _cpu_bound(cell), _cpu_bound(raw)
    if not mine or not base or not bound or not raw_bound or not cell.rate or not raw.rate:
        return ""
    busy, raw_busy = 100 * cell.rate / bound, 100 * raw.rate / raw_bound
    allows = 100 * base / mine
    text = (
        f". Client {client:,.0f} + server {server[0]:,.0f} µs CPU per append vs raw "
        f"{raw_client:,.0f} + {raw_server[0]:,.0f}; CPU bound on {CORES} cores {bound:,.0f}/s, "
        f"measured {cell.rate:,.0f}/s ({busy:.0f}%; raw {raw.rate:,.0f} of {raw_bound:,.0f}/s, "
        f"{raw_busy:.0f}%)"
    )
    extra = f"client {client - raw_client:+,.0f}, server {server[0] - raw_server[0]:+,.0f} µs"
    target = SHAPE_TARGETS[cell.mode]
    if allows < target:
        text += (
            f": at raw's use of the cores, the extra CPU per append ({extra}) alone holds it "
            f"to {allows:.0f}% of raw "
            f"(target {target:.0f}%)"
        )
    else:
        text += (
            f": at raw's use of the cores, its CPU per append ({extra}) alone would allow "
            f"{allows:.0f}% of raw; the rest "
            f"is time the cores are not busy with this run: {100 - busy:.0f}% of the wall vs "
            f"raw's {100 - raw_busy:.0f}%"
        )
    text += _pieces_why(out)
    wall = sum(cell.walls)
    if wall and sum(cell.cpus) / wall >= 0.9:
        text += (
            f"; this process's CPU is {100 * sum(cell.cpus) / wall:.0f}% of the wall "
            "(its Python code runs under one GIL)"
        )
    return text


def _pieces_why(out: Outcome) -> str:
    """What of the server's extra CPU per append the piece table puts where ('' without it)."""
    cost = {piece.key: piece.server_us for piece in out.pieces}
    if not {"raw", "seen", "seen-noupdate", "seen-missupdate", "seen-notrigger"} <= set(cost):
        return ""
    update = cost["seen"] - cost["seen-noupdate"]
    text = (
        f"; on the server (“{PIECES}” below), the append's procedure costs "
        f"{cost['seen']:,.0f} µs vs raw's {cost['raw']:,.0f}: the UPDATE of the session's row "
        f"(the head's compare-and-set) {update:,.0f} µs, of which "
        f"{cost['seen-missupdate'] - cost['seen-noupdate']:,.0f} µs is the statement's "
        f"cost with no row to change, the search queue's row "
        f"{cost['seen'] - cost['seen-notrigger']:,.0f} µs"
    )
    if "key" in cost and "key-quiet" in cost:
        text += f", the locked path's answer {cost['key'] - cost['key-quiet']:,.0f} µs"
    return text


def _pieces_table(out: Outcome) -> Iterator[str]:
    raw = next((piece.server_us for piece in out.pieces if piece.key == "raw"), None)
    yield "| what 8 connections run at once | server CPU µs/append | % of raw |"
    yield "|---|---:|---:|"
    for piece in out.pieces:
        yield f"| {piece.label} | {piece.server_us:,.0f} | {_ratio(piece.server_us, raw)} |"


def _read_verdicts(out: Outcome) -> Iterator[str]:
    raw = next((c for c in out.reads if c.is_raw), None)
    for cell in out.reads:
        if cell.is_raw:
            continue
        goal = (
            f"{out.backend.title}, {cell.label}: `history(limit={RECENT})` at ≥ "
            f"{READ_TARGET:.0f}% of {raw.label if raw else 'raw'}'s speed"
        )
        if cell.median_us is None or raw is None or raw.median_us is None:
            yield f"- **SKIP** {goal}: not measured"
            continue
        share = 100 * raw.median_us / cell.median_us
        yield (
            f"- **{_verdict(share, READ_TARGET)}** {goal}: {_percent(share)} "
            f"({cell.median_us:,.0f} vs {raw.median_us:,.0f} µs)"
        )


def render(outcomes: list[Outcome], plan: Plan, machine: dict[str, str], threads_note: str) -> str:
    shortest, longest = text_lengths()
    parts = [
        "# sessionary server benchmarks",
        "",
        "Generated by `bench/servers.py` from a single run; do not edit by hand, re-run instead.",
        "",
        "| | |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in machine.items()),
        "",
        "## Servers and their durability settings",
        "",
        "| backend | server | settings read from the server | scratch space |",
        "|---|---|---|---|",
    ]
    for out in outcomes:
        found = dict(out.settings)
        version = found.pop("version", "-")
        shown = ", ".join(f"`{k}={v}`" for k, v in found.items()) or out.reason or "-"
        parts.append(f"| {out.backend.title} | {version} | {shown} | {out.cleaned or '-'} |")
    parts += ["", "## Targets", "", *verdicts(outcomes), ""]
    for out in outcomes:
        parts += [f"## {out.backend.title}", ""]
        if out.status != "ok":
            parts += [f"Not measured: {out.status} ({out.reason}).", ""]
            if not out.cells:
                continue
        parts += [
            "### Append throughput",
            "",
            "Messages stored per second of wall time, all writers together; `% of raw` is "
            "this rate over the raw driver's rate with the same writers and session sharing.",
            "",
            *_append_table(out),
            "",
            f"### `history(limit={RECENT})` at depth {plan.depth:,}",
            "",
            *_read_table(out, plan.depth),
            "",
        ]
        if out.pieces:
            parts += [
                f"### {PIECES}",
                "",
                "The server's CPU per append (its connections' threads, median of the blocks) "
                "of what an append runs on it, whole and with one piece left out, each in a "
                "scratch database of its own (`bench/probe_mysql_stmt.py`); the client is "
                "bare PyMySQL.",
                "",
                *_pieces_table(out),
                "",
            ]
    parts += ["## Notes", "", *_notes(plan, shortest, longest, threads_note), ""]
    return "\n".join(parts)


def _notes(plan: Plan, shortest: int, longest: int, threads_note: str) -> Iterator[str]:
    yield (
        f"- Appends: each cell (library and writer shape) holds its writers' connections for the "
        f"whole run, each opened by one untimed append per writer before the first round (a "
        f"sessionary manager connects on first use, a raw driver when made); {plan.rounds} "
        f"round(s) give every cell one {plan.block_seconds} s block each, "
        f"in a new random order per round, so sessionary and the raw driver share the machine's "
        f"noise. The rate is all messages over all block time; the range is per block. "
        f"Messages are alternating user/assistant texts of {shortest}-{longest} characters; "
        f"each append builds its message (sessionary `Message`, raw JSON body) inside the loop."
    )
    yield f"- Concurrency: {threads_note}"
    yield (
        "- sessionary: every writer has its own sync `SessionManager` (its own connection "
        "pool) and calls `session.append(message)`; the shared-session cells all append to one "
        "session created beforehand. Raw SQL: one `INSERT` of a row shaped like sessionary's "
        "(session key, time-ordered text id, parent id, role, time, JSON body) into a table "
        "with a primary key and a unique `(session_pk, id)` index, then `COMMIT`, over one "
        "driver connection per writer. sessionary's tables carry more indexes (the path "
        "indexes and the full-text index), which the raw table does not: that is part of "
        "what the ratio measures."
    )
    yield (
        "- Redis, two libraries. The `redis://` store: a sync `SessionManager(url)` per writer "
        "(the full session tree, `session.append(message)`), where an append is one Lua "
        "script that checks the head, stores the entry and every `snapshot_frequency` "
        "messages rolls the loose entries into a new chunk; `roll-ups off` is the URL's "
        "`snapshot_frequency=0`. `IncrementalSessionManager(RedisDriver(url, namespace=…))`, "
        "one per writer: an append is one Lua script that allocates the sequence numbers, "
        "writes the loose entries and the meta counters and, every `snapshot_frequency` "
        "messages, rolls the loose entries into a new chunk; `get_history` reads the meta "
        "entry, the newest loose entries and the newest chunk with one `MGET` (one Lua "
        "script when the manager has not seen the session's meta entry yet); `roll-ups off` "
        f"is `snapshot_frequency={NO_ROLLUPS:,}`. Raw: one `RPUSH` of the JSON body per message."
    )
    yield (
        f"- Reads: a separate session per library is built to {plan.depth:,} messages in "
        f"batches of 1,000, then `history(limit={RECENT})` (`get_history(id, {RECENT})` on "
        f"Redis) is timed in blocks of {plan.read_block}, interleaved over "
        f"{plan.read_rounds} round(s), at most {plan.read_budget:.0f} s per library. Raw SQL "
        f"reads `SELECT data … WHERE session_pk = %s ORDER BY seq DESC LIMIT {RECENT}` and "
        f"`json.loads` each body; raw Redis reads `LRANGE key -{RECENT} -1`. sessionary's "
        f"reads touch every returned message's text (bodies are decoded on first use, so "
        f"a read that left them untouched would skip work the raw readers do). `raw's time over "
        f"this` is the raw median over the library's (100% = as fast as raw)."
    )
    yield (
        "- Client CPU is this process's CPU time over the block's wall time (100% = one core "
        "busy); near 100% means the Python client, not the server, set the pace. The `server "
        "deadlocks` (and, on MariaDB, `server lock waits`) columns are the server-wide "
        "counters' increase over the cell's blocks: they count every client of the server, not "
        "only this run's. `messages per session at end` is how long the cell's session(s) grew "
        "in the timed blocks (each starts from the untimed appends only). A roll-up writes one "
        "new chunk and never rewrites an older one, so an append's cost does not grow with "
        "the session."
    )
    yield (
        "- CPU per append, read around each block (outside its timing): `client CPU µs/append` "
        "is this process's CPU time over the cell's appends; `server CPU µs/append` is the CPU "
        "time the server spent over the cell's blocks (the kernel's `/proc/<id>/schedstat`), per "
        "append: on PostgreSQL the backends of this run's connections (named after the run with "
        "`PGAPPNAME`) and every process of the server that serves no client (WAL writer, "
        "checkpointer, background writer, autovacuum); on MariaDB the threads of this run's "
        "connections (`information_schema.PROCESSLIST.TID`) and every `mariadbd` thread serving "
        "no connection at the start and end of the block (InnoDB's, idle ones); on Redis the "
        "whole `redis-server` process, whose one main thread serves every client, other "
        "clients included. `of which background` is the part spent by the tasks that serve no "
        "client: they work for every client, so on a busy server this is an upper bound of the "
        "run's share. A task that ends within a block is not counted. `CPU bound` is the rate "
        f"the machine's {CORES} cores would allow if that client and server CPU were all an "
        "append cost: a measured rate near it means the cores were the limit; one well below "
        "it, that the appends waited (locks, log flushes, round trips) or that other work "
        "shared the cores. These columns are empty where the server is not on this machine. "
        "A FAIL line for an append row gives them beside raw's, and the share of raw's rate "
        "its CPU per append alone would allow at raw's use of the cores."
    )
    yield (
        "- The servers run on the same machine as the client, so client and server compete "
        "for the same cores."
    )


THREADS_NOTE = (
    f"the {WRITERS}-writer cells run {WRITERS} threads in one process. An append spends most of "
    "its time waiting on the server (a commit's log flush, a network round trip), and psycopg, "
    "PyMySQL's socket reads and redis-py all release the GIL while they wait, so threads do "
    "overlap their server time; the Python work around each call (building and encoding the "
    "message, SQL or Lua arguments) is serialised by the GIL, for sessionary and for the raw "
    "driver alike. Processes were not used: on a 2-core machine that also hosts the servers "
    "they would add little parallelism, and the issue asks for the sync API from threads. "
    "Where the client CPU column nears 100%, the GIL (one core) is the limit, not the server."
)


def settings_line(outcomes: list[Outcome]) -> str:
    return ", ".join(f"{o.backend.title} {o.settings.get('version', o.status)}" for o in outcomes)
