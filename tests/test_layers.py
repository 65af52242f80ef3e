"""Imports point down the layers of DESIGN §1: a walk of edgeprint's import graph.

Every module of the package belongs to one layer (longest prefix wins) and may
import only its own layer, the leaves, and the layers its entry names. Imports
inside functions and under ``TYPE_CHECKING`` count like any other.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "edgeprint"

#: Modules with no edgeprint layer above them: anyone may import them.
LEAVES = (
    "edgeprint",  # the package itself (__version__)
    "edgeprint._build",
    "edgeprint.version",
    "edgeprint.errors",  # a package (issue 28): base, store, requests, auth, printers
    "edgeprint.config",  # a package (issue 28): base, appliance, peers, file
    "edgeprint.config_checks",
    "edgeprint.reload",
    "edgeprint.logs",
    "edgeprint.metrics",
    "edgeprint.states",
    "edgeprint.copies",
    # issue 28: judge and the poison / busy / retry policy beside it (pure)
    "edgeprint.copy_policy",
    # what printer answers prove, what a printer keeps and echoes, a printer's lives (pure)
    "edgeprint.evidence",  # a package (issue 28): table, identity, observe
    "edgeprint.personality",
    "edgeprint.epochs",
    # page sizes against ready media (pure)
    "edgeprint.stock",
    "edgeprint.runway",  # a label roll's count and forecast (pure)
    "edgeprint.records",
    "edgeprint.board",
    "edgeprint.backoff",
    "edgeprint.faults",
    "edgeprint.timefmt",
    "edgeprint.systemd",
    "edgeprint.pins",
    "edgeprint.spool",
    # pure certificate-fingerprint parsing, which the config validates with
    "edgeprint.printers.tls",
    # issue 23 (preflight): does a badge fit the ready stock (pure; the config validates with it)
    "edgeprint.media_fit",
    # issue 24: a job's title made from a PDF /Title, an IPP job-name, a file name (pure)
    "edgeprint.titles",
    # issue 25: what a control character is, and outside text escaped and cut (pure)
    "edgeprint.printable",
    # issue 26: the appliance's own TLS certificate, made, read and shown (files only)
    "edgeprint.certificates",
    # issue 26: the certificate the running appliance serves, reloaded and watched
    "edgeprint.tls_runtime",
    # a task for the duration of a block (asyncio only)
    "edgeprint.background",
    # issue 27: the run clock and the wall-clock step detector (pure)
    "edgeprint.clock",
    # issue 28: IPP said once, the codec and the names shared by the client (printers),
    # the server (ipp_server) and everything between (dispatch, api); as a leaf it may
    # import only other leaves
    "edgeprint.ipp",
)

#: layer → (its module prefixes, the layers it may import besides its own and the leaves).
LAYERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "store": (("edgeprint.store",), ()),
    "documents": (("edgeprint.documents",), ()),
    "printers": (("edgeprint.printers",), ()),
    "service": (("edgeprint.service",), ("store", "documents")),
    "dispatch": (("edgeprint.dispatch",), ("service", "printers", "documents", "leases")),
    # issue 28: printer ownership when the store is shared (a lease per printer, renewed by
    # a heartbeat) is the dispatcher's, and it alone of the dispatcher reads its store rows
    "leases": (("edgeprint.dispatch.leases",), ("store",)),
    # the outbox's reader and sender: it reads what the service wrote in the same transaction
    "webhooks": (("edgeprint.webhooks",), ("store",)),
    # the wire models the two front doors share (JSON bodies, validated submissions); a
    # package by subject since issue 28 (edgeprint.models.jobs, .printers, .release, …)
    "models": (("edgeprint.models",), ()),
    # issue 28: the formats a queue takes and which are converted are documents' knowledge
    "ipp_server": (("edgeprint.ipp_server",), ("service", "models", "printers", "documents")),
    "api": (("edgeprint.api",), ("service", "models", "ipp_server", "printers")),
    "cli": (
        (
            "edgeprint.cli",
            "edgeprint.setup",
            "edgeprint.__main__",
        ),
        ("api", "printers", "root"),
    ),
    # the composition root: opens and wires everything
    "root": (
        (
            "edgeprint.server",
            # issue 28: what runs beside the API and the workers, and reload on SIGHUP
            "edgeprint.companions",
            "edgeprint.sighup",
        ),
        (
            "store",
            "documents",
            "printers",
            "service",
            "dispatch",
            "leases",
            "webhooks",
            "models",
            "ipp_server",
            "api",
        ),
    ),
}


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """``edgeprint/api/app.py`` → ``edgeprint.api.app``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The edgeprint modules ``source`` imports anywhere (module level, functions, TYPE_CHECKING).

    ``from edgeprint.x import y`` names ``edgeprint.x.y`` when that is a module
    in ``known``, else ``edgeprint.x``; relative imports are resolved against ``module``.
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                up = here[: len(here) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m == "edgeprint" or m.startswith("edgeprint.")}


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module → the edgeprint modules it imports, for every module under ``root``."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    known = set(files)
    return {
        mod: imports_of(path.read_text(), mod, path.name == "__init__.py", known)
        for mod, path in files.items()
    }


def _under(module: str, prefix: str) -> bool:
    # The package's own entry covers only edgeprint/__init__.py, not everything in it.
    return module == prefix or (prefix != "edgeprint" and module.startswith(prefix + "."))


def _owner(module: str, table: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> str:
    best, best_len = "", -1
    for prefix in LEAVES:
        if _under(module, prefix) and len(prefix) > best_len:
            best, best_len = "leaf", len(prefix)
    for layer, (prefixes, _) in table.items():
        for prefix in prefixes:
            if _under(module, prefix) and len(prefix) > best_len:
                best, best_len = layer, len(prefix)
    return best


def violations(
    graph: Mapping[str, Iterable[str]],
    table: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = LAYERS,
) -> list[str]:
    """Every import that points up or sideways, and every module in no layer, as sentences."""
    out: list[str] = []
    for module in sorted(graph):
        layer = _owner(module, table)
        if not layer:
            out.append(f"{module} is in no layer: add it to LAYERS or LEAVES")
            continue
        allowed = {"leaf", layer} if layer != "leaf" else {"leaf"}
        if layer != "leaf":
            allowed |= set(table[layer][1])
        for target in sorted(graph[module]):
            to = _owner(target, table)
            if to and to not in allowed:
                out.append(f"{module} ({layer}) imports {target} ({to})")
    return out


def test_imports_point_down_the_layers() -> None:
    """No module of edgeprint imports a layer above it or beside it, and each has a layer."""
    graph = import_graph()
    assert {"edgeprint.service.jobs", "edgeprint.api.app"} <= set(graph)  # the walk found them
    assert violations(graph) == []


def test_an_upward_import_is_caught() -> None:
    """A synthetic store → service edge and an API → store edge are both reported."""
    graph = {
        "edgeprint.store.jobs": {"edgeprint.service.jobs", "edgeprint.states"},
        "edgeprint.api.app": {"edgeprint.store.jobs"},
        "edgeprint.service.jobs": {"edgeprint.store.jobs"},
    }
    assert violations(graph) == [
        "edgeprint.api.app (api) imports edgeprint.store.jobs (store)",
        "edgeprint.store.jobs (store) imports edgeprint.service.jobs (service)",
    ]


def test_a_function_level_import_counts() -> None:
    """An import inside a function (or under TYPE_CHECKING) is an edge like any other."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from edgeprint.api.app import Deps\n"
        "def f():\n    from edgeprint import service\n    import edgeprint.printers.ipp\n"
        "    from . import jobs\n"
    )
    known = {"edgeprint.service", "edgeprint.store.jobs", "edgeprint.api.app"}
    found = imports_of(source, "edgeprint.store.copies", False, known)
    assert found == {
        "edgeprint.api.app", "edgeprint.service", "edgeprint.printers.ipp", "edgeprint.store.jobs",
    }  # fmt: skip
    graph = {"edgeprint.store.copies": found}
    assert len(violations(graph)) == 3  # api, service and printers are all above or beside store


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every import circle of ``graph``: its strongly connected components of more than one
    module (or a module importing itself), each sorted, in sorted order (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph.get(module, ()):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component: list[str] = []
            while not component or component[-1] != module:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1 or module in graph.get(module, ()):
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_the_import_graph_has_no_circle() -> None:
    """No module of edgeprint reaches itself through its imports (module level, inside
    functions or under TYPE_CHECKING): the route table owns its row types, so the OpenAPI
    builder reads the table and the table never imports the builder."""
    graph = import_graph()
    assert {"edgeprint.api.openapi", "edgeprint.api.routes"} <= set(graph)
    assert cycles(graph) == []


def test_a_planted_circle_is_caught() -> None:
    """The walk finds a circle planted in the real graph (the old openapi ↔ routes one), a
    longer one through three packages, and a module importing itself."""
    graph = {module: set(targets) for module, targets in import_graph().items()}
    graph["edgeprint.api.routes"].add("edgeprint.api.openapi")
    assert ["edgeprint.api.openapi", "edgeprint.api.routes"] in cycles(graph)
    synthetic = {
        "edgeprint.a.x": {"edgeprint.b.y", "edgeprint.states"},
        "edgeprint.b.y": {"edgeprint.c.z"},
        "edgeprint.c.z": {"edgeprint.a.x"},
        "edgeprint.states": set(),
        "edgeprint.self": {"edgeprint.self"},
    }
    assert cycles(synthetic) == [
        ["edgeprint.a.x", "edgeprint.b.y", "edgeprint.c.z"],
        ["edgeprint.self"],
    ]


def test_a_module_outside_every_layer_is_reported() -> None:
    """A new top-level module nobody placed in a layer fails the walk until it is placed."""
    assert violations({"edgeprint.newthing": set()}) == [
        "edgeprint.newthing is in no layer: add it to LAYERS or LEAVES"
    ]


def test_the_service_digest_matches_the_api_models_dump() -> None:
    """The service's Idempotency-Key digest, computed without the API models, equals the
    digest of the model's JSON dump that earlier versions stored (replays still match); a
    title (issue 24) counts only when one is given, so jobs stored before it still match."""
    import hashlib
    import json

    from edgeprint.models import SubmitMetadata
    from edgeprint.service import request_digest

    for meta in (
        SubmitMetadata(owner="ada", printer="printer-01"),
        SubmitMetadata(owner="bob", pool="front", priority=7, hold=False, copies=3,
                       release_pin="1234"),
        SubmitMetadata(owner="cy", printer="printer-01", title="Cy Young"),
    ):  # fmt: skip
        untitled = set() if meta.title is not None else {"title"}
        fields = meta.model_dump(mode="json", exclude={"release_pin"} | untitled)
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        stored = hashlib.sha256(f"{canonical}\nabc".encode()).hexdigest()
        assert request_digest(meta, "abc") == stored


def test_the_store_spells_no_state_in_its_sql() -> None:
    """No job or copy state is written as a literal in the store's queries: each list is
    derived from the transition tables (edgeprint/store/guards.py)."""
    from edgeprint.copies import CopyState
    from edgeprint.states import JobState

    names = [s.value for s in JobState] + [s.value for s in CopyState]
    store = ("jobs", "job_reads", "job_rows", "copies", "copy_reads", "units")
    service = ("front", "views", "resolutions", "worker_calls", "outcomes", "printer_controls")
    paths = [f"store/{m}.py" for m in store] + [f"service/{m}.py" for m in service]
    for path in (*paths, "service/jobs.py", "service/admission.py"):
        source = (PACKAGE / path).read_text()
        spelled = [n for n in names if f"'{n}'" in source]
        assert spelled == [], f"{path} spells {spelled}"


def test_the_guards_say_what_the_tables_say() -> None:
    """The derived lists name today's states (a change of table shows up here first)."""
    from edgeprint.copies import CopyState as C
    from edgeprint.states import JobState as S
    from edgeprint.store import guards

    assert guards.WAITING == (S.RELEASED,)
    assert guards.ON_PRINTER == (S.PRINTING,)
    assert guards.CLAIMED is S.PRINTING
    assert guards.HELD == guards.EXPIRABLE == (S.HELD,)
    assert guards.EXPIRED is S.EXPIRED
    assert guards.DEAD == (S.DEAD,)
    assert {S.DONE, S.CANCELLED, S.EXPIRED} == guards.FINISHED
    assert guards.CANCELLING is C.CANCELLING
    assert guards.UNREQUESTED == (C.CREATING,)
    assert guards.in_list([S.RELEASED, S.HELD]) == "'HELD', 'RELEASED'"


#: SQL text: a statement's verb and, later in the same string, its clause (case as written).
_SQL = re.compile(
    r"\b(SELECT|UPDATE|INSERT|DELETE)\b.*\b(FROM|SET|INTO|WHERE)\b|\bSELECT 1\b", re.S
)
#: Keyword arguments that hand a store column names or a guard's SQL.
_STORE_KEYWORDS = {"sets", "guard", "guard_params"}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of ``tree`` (text for people, not SQL)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def store_leaks(source: str) -> list[str]:
    """What of the store's own language ``source`` speaks: SQL text in a string, a ``GUARD_``
    name, or a ``sets=`` / ``guard=`` argument (each as a sentence with its line)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    for joined in ast.walk(tree):  # an f-string's parts are read with it, as one text
        if isinstance(joined, ast.JoinedStr):
            skip |= {id(v) for v in joined.values}
    out: list[str] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(
                str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values
            )
        if text is not None and _SQL.search(text):
            out.append(f"line {line}: SQL text {text[:40]!r}")
        names = []
        if isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        out += [f"line {line}: guard {n}" for n in names if n.startswith("GUARD_")]
        if isinstance(node, ast.keyword) and node.arg in _STORE_KEYWORDS:
            out.append(f"line {node.value.lineno}: store argument {node.arg}=")
    return sorted(out)


def test_no_sql_guard_or_column_dict_above_the_store() -> None:
    """Only edgeprint/store/ speaks SQL, names a guard or hands a column dict to a write: the
    layers above ask for named operations (issue 28)."""
    leaks = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "store"
        and (found := store_leaks(path.read_text()))
    }
    assert leaks == {}


def test_a_store_leak_is_caught() -> None:
    """A planted query, guard import and column dict are each reported; a docstring that
    describes a statement, and a message naming a DELETE route, are not."""
    source = (
        '"""Each change is one ``UPDATE … WHERE state IN (…)``."""\n'
        "from edgeprint.store.jobs import GUARD_PRINTED\n"
        'ROWS = f"SELECT id FROM jobs WHERE state = {x}"\n'
        "HINT = 'codes and cards (DELETE /v1/owners/OWNER) and set new ones'\n"
        "async def f(jobs):\n"
        "    await jobs.transition('a', sets={'printer': None}, guard=GUARD_PRINTED)\n"
        "    await store.write('SELECT 1')\n"
    )
    assert store_leaks(source) == [
        "line 2: guard GUARD_PRINTED",
        "line 3: SQL text 'SELECT id FROM jobs WHERE state = {}'",
        "line 6: guard GUARD_PRINTED",
        "line 6: store argument guard=",
        "line 6: store argument sets=",
        "line 7: SQL text 'SELECT 1'",
    ]


def _top_level_imports(path: Path) -> set[str]:
    """The first name of every module ``path`` imports (anywhere in the file)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_tests_and_the_testbed_never_import_the_benches() -> None:
    """bench/ sits on top: tests and testbed/ (shared by both) import nothing from it."""
    root = PACKAGE.parent
    offenders = sorted(
        str(p.relative_to(root))
        for d in ("tests", "testbed")
        for p in (root / d).rglob("*.py")
        if "bench" in _top_level_imports(p)
    )
    assert offenders == []


def _store_columns() -> set[str]:
    """Every column of every table the SQLite migrations make."""
    import sqlite3

    from edgeprint.store.schema.sqlite import MIGRATIONS

    conn = sqlite3.connect(":memory:")
    for statements in MIGRATIONS:
        for stmt in statements:
            conn.execute(stmt)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {r[1] for t in tables for r in conn.execute(f"PRAGMA table_info({t})")}


def _wire_fields() -> set[str]:
    """Every field name (and alias) of the API's wire models: those may be dict keys anywhere."""
    import inspect

    from pydantic import BaseModel

    from edgeprint import models

    out: set[str] = set()
    for obj in vars(models).values():
        if inspect.isclass(obj) and issubclass(obj, BaseModel):
            for name, info in obj.model_fields.items():
                out |= {name, info.alias} if info.alias else {name}
    return out


def column_dicts(source: str, columns: set[str], wire: set[str]) -> list[str]:
    """Dict literals in ``source`` made only of store column names, two or more, one of them
    a name no wire model uses: a row's columns spelled outside the store."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Dict) or len(node.keys) < 2:
            continue
        keys = [
            k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
        ]
        spelled = len(keys) == len(node.keys)
        if spelled and set(keys) <= columns and not set(keys) <= wire:
            out.append(f"line {node.lineno}: columns {sorted(set(keys) - wire)}")
    return out


def test_no_column_dict_above_the_store() -> None:
    """Above edgeprint/store/ no dict literal spells a row's columns (a store-only column
    beside others): the store's named operations take arguments, not column dicts."""
    columns, wire = _store_columns(), _wire_fields()
    leaks = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "store"
        and (found := column_dicts(path.read_text(), columns, wire))
    }
    assert leaks == {}


def test_a_column_dict_is_caught() -> None:
    """A planted row of columns is reported; a webhook body of wire names is not."""
    columns, wire = _store_columns(), _wire_fields()
    source = (
        "SETS = {'finished_at': now, 'pin_failures': 0, 'settled_by': 'person'}\n"
        "BODY = {'id': job_id, 'state': 'RELEASED', 'printer': printer}\n"
    )
    assert "pin_failures" in columns
    assert "pin_failures" not in wire
    assert column_dicts(source, columns, wire) == ["line 1: columns ['pin_failures']"]
