"""A throw-away Patroni cluster: one etcd member and two Patroni-managed PostgreSQL nodes.

For the failover tests and ``bench.pg_bench --only failover`` (issue 27 §2). Everything
runs on loopback (or, with ``netns=True``, node 1 in a network namespace joined to the host
by a veth pair, so its "host" can be cut off the network); each process has its own data
directory and ports, runs as an unprivileged user when run as root (PostgreSQL refuses
root), is waited for by polling Patroni's REST API, and is stopped by its pid.

``synchronous_mode`` with ``synchronous_mode_strict``: a commit is acknowledged only once the
other node has it, so a failover loses no acknowledged commit; with two nodes the promoted
replica takes no commit until a standby is back (:meth:`PatroniCluster.start_node` brings a
killed node back as a rebooted host would: pg_rewind, then a replica).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.pg import PG_USER, _free_port, find_pg_bin
from testbed.polling import TimedOut, until_sync

_DB = "edgeprint"
#: Leader key TTL, HA loop and DCS retry (seconds): a failover within ~ttl + loop_wait.
TTL_S = 8
LOOP_WAIT_S = 1
RETRY_TIMEOUT_S = 3
_START_DEADLINE_S = 90.0


def find_patroni() -> tuple[str, str] | None:
    """``(patroni, etcd)`` executables, or None when either is missing."""
    patroni, etcd = shutil.which("patroni"), shutil.which("etcd")
    if patroni is None or etcd is None or find_pg_bin() is None:
        return None
    return patroni, etcd


def _get(url: str, timeout_s: float = 1.0) -> tuple[int, dict[str, Any]]:
    """Status and JSON body of a GET; (0, {}) when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return int(r.status), json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            body = json.loads(exc.read() or b"{}")
        except ValueError:
            body = {}
        return int(exc.code), body
    except (OSError, ValueError):
        return 0, {}


def _descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (by /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


@dataclass
class Node:
    """One Patroni + PostgreSQL "host"."""

    name: str
    host: str
    pg_port: int
    api_port: int
    root: Path
    netns: str | None = None
    proc: subprocess.Popen[bytes] | None = None
    starts: int = field(default=0)

    @property
    def api(self) -> str:
        return f"http://{self.host}:{self.api_port}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.pg_port}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class PatroniCluster:
    """etcd and two Patroni nodes; :meth:`url` is a libpq multi-host URL of a new schema."""

    def __init__(self, *, netns: bool = False, durable: bool = False) -> None:
        found = find_patroni()
        pg_bin = find_pg_bin()
        if found is None or pg_bin is None:
            raise RuntimeError("patroni, etcd or PostgreSQL is not installed")
        self.patroni, self.etcd_bin = found
        self.pg_bin = pg_bin
        self.durable = durable
        self.root = Path(tempfile.mkdtemp(prefix="edgeprint-patroni-"))
        self.scope = f"ep{uuid.uuid4().hex[:8]}"
        self._as: dict[str, Any] = {}
        self._uid = self._gid = -1
        if os.geteuid() == 0:
            pw = pwd.getpwnam(PG_USER)
            self._uid, self._gid = pw.pw_uid, pw.pw_gid
            self._as = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self.netns: str | None = None
        self._veth = ""
        host = "127.0.0.1"
        ns_host = host
        if netns:
            self.netns, self._veth, host, ns_host = self._make_netns()
        self.etcd_host = host
        self.etcd_port, self.etcd_peer_port = _free_port(), _free_port()
        self.etcd: subprocess.Popen[bytes] | None = None
        self.nodes = [
            Node("pg1", ns_host, _free_port(), _free_port(), self.root / "pg1", self.netns),
            Node("pg2", host, _free_port(), _free_port(), self.root / "pg2"),
        ]

    # --- network namespace (node 1's host) ------------------------------------

    def _make_netns(self) -> tuple[str, str, str, str]:
        tag = uuid.uuid4().hex[:6]
        name, host_end, ns_end = f"epf{tag}", f"epf{tag}h", f"epf{tag}n"
        net = f"10.{int(tag[:2], 16) % 200 + 20}.{int(tag[2:4], 16)}"
        _ip("netns", "add", name)
        try:
            _ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
            _ip("link", "set", ns_end, "netns", name)
            _ip("addr", "add", f"{net}.1/30", "dev", host_end)
            _ip("link", "set", host_end, "up")
            _ip("netns", "exec", name, "ip", "addr", "add", f"{net}.2/30", "dev", ns_end)
            _ip("netns", "exec", name, "ip", "link", "set", ns_end, "up")
            _ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
        except BaseException:
            subprocess.run(["ip", "link", "del", host_end], capture_output=True, timeout=10)
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)
            raise
        return name, ns_end, f"{net}.1", f"{net}.2"

    def cut(self, node: Node) -> None:
        """Cut ``node``'s host off the network (its end of the veth goes down: what the
        others send it is dropped, nothing answers — a pulled cable, not a refusal)."""
        assert node.netns is not None, "only the node in the namespace can be cut off"
        _ip("netns", "exec", node.netns, "ip", "link", "set", self._veth, "down")

    def reconnect(self, node: Node) -> None:
        """Plug ``node``'s cable back in."""
        assert node.netns is not None
        _ip("netns", "exec", node.netns, "ip", "link", "set", self._veth, "up")

    # --- lifecycle --------------------------------------------------------------

    def start(self) -> None:
        """etcd, both nodes, then the ``edgeprint`` database; waits (with deadlines) until
        there is a primary and a synchronous standby."""
        try:
            self._start_etcd()
            for node in self.nodes:
                self.start_node(node)
            primary = self.wait_primary()
            self.wait_sync_standby()
            import psycopg

            with psycopg.connect(self._dsn(primary, "postgres"), autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {_DB}")
        except BaseException:
            self.stop()
            raise

    def _spawn(self, argv: list[str], log: Path, netns: str | None) -> subprocess.Popen[bytes]:
        out = open(log, "ab")  # noqa: SIM115 - the child's own log
        try:
            if netns is None:
                return subprocess.Popen(
                    argv, stdout=out, stderr=subprocess.STDOUT, cwd=self.root, **self._as
                )
            drop = []
            if self._uid >= 0:
                drop = ["setpriv", f"--reuid={self._uid}", f"--regid={self._gid}",
                        "--clear-groups", "--"]  # fmt: skip
            # ``ip netns exec`` and setpriv exec in place: the pid is the program's own
            return subprocess.Popen(
                ["ip", "netns", "exec", netns, *drop, *argv],
                stdout=out, stderr=subprocess.STDOUT, cwd=self.root,
            )  # fmt: skip
        finally:
            out.close()

    def _start_etcd(self) -> None:
        data = self.root / "etcd"
        client = f"http://{self.etcd_host}:{self.etcd_port}"
        peer = f"http://{self.etcd_host}:{self.etcd_peer_port}"
        self.etcd = self._spawn(
            [
                self.etcd_bin, "--name", "etcd0", "--data-dir", str(data),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"etcd0={peer}", "--initial-cluster-state", "new",
                "--initial-cluster-token", self.scope, "--logger", "zap",
                "--heartbeat-interval", "100", "--election-timeout", "1000",
            ],
            self.root / "etcd.log", None,
        )  # fmt: skip
        self._until(lambda: _get(f"{client}/health")[0] == 200, "etcd answers", self.etcd)

    def _config(self, node: Node) -> dict[str, Any]:
        other = [n for n in self.nodes if n is not node]
        hba = ["local all all trust"]
        for n in (node, *other):
            hba += [f"host all all {n.host}/32 trust", f"host replication all {n.host}/32 trust"]
        hba += ["host all all 127.0.0.1/32 trust", f"host all all {self.etcd_host}/32 trust"]
        fast = {} if self.durable else {"fsync": "off", "full_page_writes": "on"}
        user = {"username": "edgeprint", "password": "edgeprint"}
        return {
            "scope": self.scope,
            "name": node.name,
            "log": {"level": "INFO"},
            "restapi": {
                "listen": f"{node.host}:{node.api_port}",
                "connect_address": f"{node.host}:{node.api_port}",
            },
            "etcd3": {"hosts": [f"{self.etcd_host}:{self.etcd_port}"]},
            "bootstrap": {
                "dcs": {
                    "ttl": TTL_S,
                    "loop_wait": LOOP_WAIT_S,
                    "retry_timeout": RETRY_TIMEOUT_S,
                    "maximum_lag_on_failover": 1048576,
                    "synchronous_mode": True,
                    "synchronous_mode_strict": True,
                    "postgresql": {
                        "use_pg_rewind": True,
                        "remove_data_directory_on_rewind_failure": True,
                        "parameters": {
                            "wal_log_hints": "on",
                            "max_connections": 200,
                            "max_wal_senders": 10,
                            "max_replication_slots": 10,
                            "wal_keep_size": "128MB",
                            **fast,
                        },
                    },
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}],
            },
            "postgresql": {
                "listen": f"{node.host}:{node.pg_port}",
                "connect_address": f"{node.host}:{node.pg_port}",
                "data_dir": str(node.root / "data"),
                "bin_dir": str(self.pg_bin),
                "pgpass": str(node.root / "pgpass"),
                "pg_hba": hba,
                "authentication": {"superuser": user, "replication": user, "rewind": user},
                "parameters": {"unix_socket_directories": str(node.root)},
            },
        }

    def start_node(self, node: Node) -> None:
        """Start ``node``'s Patroni (first time: it bootstraps or clones; later: a rebooted
        host, which rejoins as a replica, pg_rewind first if it must). Returns once its REST
        API answers; :meth:`wait_primary` / :meth:`wait_sync_standby` wait for more."""
        assert not node.alive()
        node.root.mkdir(exist_ok=True)
        if self._uid >= 0:
            os.chown(node.root, self._uid, self._gid)
        cfg = node.root / "patroni.yml"
        cfg.write_text(json.dumps(self._config(node), indent=1))  # JSON is YAML
        node.proc = self._spawn([self.patroni, str(cfg)], node.root / "patroni.log", node.netns)
        node.starts += 1
        self._until(lambda: _get(f"{node.api}/patroni")[0] != 0, f"{node.name}'s REST API",
                    node.proc)  # fmt: skip

    def postmaster(self, node: Node) -> int | None:
        """The pid of ``node``'s PostgreSQL (its ``postmaster.pid``): Patroni starts it
        detached, so it is not below Patroni's pid but init's."""
        try:
            pid = int((node.root / "data" / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        return pid if str(node.root / "data").encode() in cmdline else None

    def kill(self, node: Node) -> None:
        """The host dies: SIGSTOP then SIGKILL, by pid, its Patroni, its PostgreSQL and every
        process below either (backends, Patroni's helpers) at once."""
        if node.proc is None:
            return
        pids = [node.proc.pid, *_descendants(node.proc.pid)]
        postmaster = self.postmaster(node)
        if postmaster is not None:
            pids += [postmaster, *_descendants(postmaster)]
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
        node.proc.wait(timeout=10)
        node.proc = None
        for pid in pids[1:]:  # reparented to us or init: gone once they die (within ms)
            with contextlib.suppress(TimedOut):
                until_sync(functools.partial(_reaped, pid), f"pid {pid} gone", timeout_s=10)

    def reinit(self, node: Node) -> None:
        """Have Patroni rebuild ``node`` from the primary (``patronictl reinit``): what an
        operator does to a former primary that diverged and was not rewound."""
        req = urllib.request.Request(
            f"{node.api}/reinitialize", data=b'{"force": true}', method="POST",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()

    def stop_node(self, node: Node) -> None:
        """Patroni's own clean stop (SIGTERM by pid: it stops PostgreSQL first)."""
        if node.proc is None:
            return
        if node.proc.poll() is None:
            node.proc.send_signal(signal.SIGTERM)
            try:
                node.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill(node)
                return
        node.proc = None

    def stop(self) -> None:
        """Stop both nodes and etcd by pid, remove the namespace and every data directory."""
        for node in self.nodes:
            if node.netns is not None and self._veth:
                with contextlib.suppress(subprocess.CalledProcessError, OSError):
                    self.reconnect(node)  # a cut node stops quicker reachable
            with contextlib.suppress(Exception):
                self.stop_node(node)
            postmaster = self.postmaster(node)  # a PostgreSQL its Patroni left behind
            if postmaster is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(postmaster, signal.SIGKILL)
        if self.etcd is not None and self.etcd.poll() is None:
            self.etcd.terminate()
            try:
                self.etcd.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.etcd.kill()
                self.etcd.wait()
        if self.netns is not None:
            subprocess.run(["ip", "netns", "del", self.netns], capture_output=True, timeout=10)
            self.netns = None
        shutil.rmtree(self.root, ignore_errors=True)

    # --- what the cluster says ---------------------------------------------------

    def role(self, node: Node) -> str:
        """``primary`` (leader and running), ``replica``, or ``""`` (no answer)."""
        if _get(f"{node.api}/primary")[0] == 200:
            return "primary"
        status, body = _get(f"{node.api}/patroni")
        return "replica" if status and body.get("role") == "replica" else ""

    def primary(self) -> Node | None:
        found = [n for n in self.nodes if n.alive() and self.role(n) == "primary"]
        return found[0] if len(found) == 1 else None

    def wait_primary(self, timeout_s: float = _START_DEADLINE_S, not_: Node | None = None) -> Node:
        """The primary (another than ``not_``) once there is one."""
        found: list[Node] = []

        def check() -> bool:
            p = self.primary()
            if p is not None and p is not not_:
                found.append(p)
                return True
            return False

        self._until(check, "a primary", None, timeout_s)
        return found[-1]

    def wait_sync_standby(self, timeout_s: float = _START_DEADLINE_S) -> Node:
        """The synchronous standby once there is one streaming (commits go through again)."""
        found: list[Node] = []

        def check() -> bool:
            for n in self.nodes:
                if n.alive() and _get(f"{n.api}/sync")[0] == 200:
                    found.append(n)
                    return True
            return False

        self._until(check, "a synchronous standby", None, timeout_s)
        return found[-1]

    def _until(
        self,
        check: Any,
        what: str,
        proc: subprocess.Popen[bytes] | None,
        timeout_s: float = _START_DEADLINE_S,
    ) -> None:

        def done() -> bool:
            if check():
                return True
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"{what}: the process exited {proc.returncode}\n{self.logs()}")
            return False

        try:
            until_sync(done, what, timeout_s=timeout_s, every_s=0.05)  # the REST API
        except TimedOut as exc:
            raise RuntimeError(f"{exc}\n{self.logs()}") from None

    def logs(self, chars: int = 2500) -> str:
        out = []
        for name in ("etcd.log", "pg1/patroni.log", "pg2/patroni.log"):
            path = self.root / name
            if path.exists():
                out.append(f"--- {name}\n{path.read_text(errors='replace')[-chars:]}")
        return "\n".join(out)

    # --- URLs -------------------------------------------------------------------

    def _dsn(self, node: Node, db: str) -> str:
        return f"postgresql://edgeprint@{node.address}/{db}"

    def hosts(self) -> str:
        return ",".join(n.address for n in self.nodes)

    def url(self) -> str:
        """A libpq multi-host URL (``target_session_attrs=read-write``) of a new, empty schema."""
        import psycopg

        schema = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.admin_url(), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return f"{self.admin_url()}&options=-csearch_path%3D{schema}"

    def admin_url(self) -> str:
        """The multi-host URL of the database (whichever node is primary)."""
        return (
            f"postgresql://edgeprint@{self.hosts()}/{_DB}?target_session_attrs=read-write"
            "&connect_timeout=2"
        )


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, timeout=10)


def _reaped(pid: int) -> bool:
    """Whether ``pid`` is gone; reaped here if it is a child of ours."""
    if not Path(f"/proc/{pid}").exists():
        return True
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
    return False
