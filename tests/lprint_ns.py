"""Inside a private network namespace: a label printer's socket, and LPrint driving it.

Run by tests/lprint_rig.py as ``unshare --net python3 tests/lprint_ns.py ROOT STATE DRIVER
MEDIA`` (root only): ROOT is the rig's folder, STATE a short folder in /tmp that LPrint
(as nobody) owns. The namespace has nothing but its own loopback, so LPrint's IPP
listener — LPrint 1.1 listens on every address and has no option to bind
loopback only — is reachable from nowhere; tests talk to LPrint over its Unix
domain socket (``ROOT/tmp/lprintUID.sock``), as the ``lprint`` command does.

In the namespace, this process:

1. brings ``lo`` up;
2. listens on 127.0.0.1:9100 as the printer's device (``socket://`` — the
   JetDirect protocol), answers the ``~HQES`` and ``~HS`` status queries as a
   Zebra would — with no error, or with its head open, out of media, … as the
   file ``ROOT/zebra`` says (:data:`ZEBRA_FAULTS`) — and writes what each
   connection sent to ``ROOT/device/NNNN.bin`` once it closes (written then
   renamed: never half);
3. starts ``lprint server`` as user nobody (as root LPrint would use the shared
   ``/run/lprint.sock``), with its state, spool, log and socket under STATE
   (a Unix socket path must stay under 108 bytes; pytest's folders can be longer,
   and nobody cannot enter them);
4. adds the printer (``lprint add -d badge -m DRIVER -v socket://127.0.0.1:9100
   -o media-ready=MEDIA``) and writes ``ROOT/ready``;
5. on SIGTERM stops LPrint (SIGTERM, then SIGKILL after 5 s) and exits.

Stdlib only.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

NOBODY = 65534
DEVICE_PORT = 9100
IPP_PORT = 8631
PRINTER = "badge"
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, _SIOCGIFFLAGS, ifr))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | _IFF_UP))


#: What the Zebra has wrong, as ``ROOT/zebra`` says (read at every status query; no file:
#: "ok"): the ``~HQES`` error bits and the ``~HS`` flags a real one sets (Zebra's ZPL manual;
#: LPrint 1.1's lprint_zpl_status reads the error bits of ``~HQES`` and, of ``~HS``, only the
#: label length). name → (error bits, ~HS paper out, pause, head up, ribbon out).
ZEBRA_FAULTS = {
    "ok": (0x0, 0, 0, 0, 0),
    "head-open": (0x4, 0, 0, 1, 0),
    "media-out": (0x1, 1, 0, 0, 0),
    "ribbon-out": (0x2, 0, 0, 0, 1),
    "paused": (0x10000, 0, 1, 0, 0),
}
ZEBRA_FILE = "zebra"


def hqes(errors: int) -> bytes:
    """``~HQES`` (host query, extended status): the error flag, then two 8-digit hex groups
    (LPrint reads the second). LPrint asks when the printer's status is requested, and waits
    10 s for it."""
    return (
        b"\x02\r\n  PRINTER STATUS\r\n"
        + f"   ERRORS:         {int(errors != 0)} 00000000 {errors:08X}\r\n".encode()
        + b"   WARNINGS:       0 00000000 00000000\r\n\x03\r\n"
    )


def hs(paper_out: int, pause: int, head_up: int, ribbon_out: int) -> bytes:
    """``~HS`` (host status): three strings. String 1 is aaa,b(paper out),c(pause),dddd(label
    length),…; string 2 is mmm,n,o(head up),p(ribbon out),…. Label length 0 leaves the loaded
    media as configured (LPrint would otherwise match a size to the length)."""
    return (
        f"\x02030,{paper_out},{pause},0000,000,0,0,0,000,0,0,0\x03\r\n"
        f"\x02000,0,{head_up},{ribbon_out},1,2,6,0,00000000,1,000\x03\r\n"
        "\x021234,0\x03\r\n"
    ).encode()


#: The answers of a Zebra with no error and no warning.
HQES_OK = hqes(0)
HS_OK = hs(0, 0, 0, 0)


def zebra_now(root: Path) -> tuple[bytes, bytes]:
    """The answers to ``~HQES`` and ``~HS`` for what ``ROOT/zebra`` says now."""
    try:
        name = (root / ZEBRA_FILE).read_text().strip() or "ok"
    except FileNotFoundError:
        name = "ok"
    errors, paper_out, pause, head_up, ribbon_out = ZEBRA_FAULTS[name]
    return hqes(errors), hs(paper_out, pause, head_up, ribbon_out)


def serve_device(listener: socket.socket, out: Path) -> None:
    """One connection at a time, as a JetDirect port: record it, answer status queries as
    ``ROOT/zebra`` (the folder above ``out``) says."""
    n = 0
    while True:
        conn, _ = listener.accept()
        n += 1
        with conn:
            data = bytearray()
            answered = {b"~HQES": 0, b"~HS\n": 0}
            while chunk := conn.recv(65536):
                data += chunk
                replies = dict(zip((b"~HQES", b"~HS\n"), zebra_now(out.parent), strict=True))
                for query, reply in replies.items():
                    while data.count(query) > answered[query]:
                        conn.sendall(reply)
                        answered[query] += 1
        tmp = out / f".{n:04d}.part"
        tmp.write_bytes(bytes(data))
        tmp.rename(out / f"{n:04d}.bin")


def main(root: Path, state: Path, driver: str, media: str) -> int:
    loopback_up()
    device = root / "device"
    device.mkdir(parents=True, exist_ok=True)
    listener = socket.create_server(("127.0.0.1", DEVICE_PORT))
    threading.Thread(target=serve_device, args=(listener, device), daemon=True).start()

    home, tmp, spool = state / "home", state / "tmp", state / "spool"
    log = state / "lprint.log"
    for d in (home, tmp, spool):
        d.mkdir(parents=True, exist_ok=True)
    log.touch()
    as_nobody = os.geteuid() == 0
    if as_nobody:
        for p in (home, tmp, spool, log):
            os.chown(p, NOBODY, NOBODY)
    uid = NOBODY if as_nobody else os.getuid()
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(home), "TMPDIR": str(tmp)}
    user = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if as_nobody else {}
    server = subprocess.Popen(
        ["lprint", "server", "-o", f"server-port={IPP_PORT}", "-o", "server-hostname=localhost",
         "-o", f"spool-directory={spool}", "-o", f"log-file={log}", "-o", "log-level=debug",
         "-o", "server-options=no-tls,no-web-interface,no-multi-queue"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        **user,  # type: ignore[arg-type]
    )  # fmt: skip
    (root / "lprint.pid").write_text(f"{server.pid}\n")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        sock = tmp / f"lprint{uid}.sock"
        deadline = time.monotonic() + 15
        while not sock.exists():
            if server.poll() is not None or time.monotonic() > deadline or stop.is_set():
                print(f"lprint server did not open {sock}", file=sys.stderr)
                return 1
            time.sleep(0.05)
        add = subprocess.run(
            ["lprint", "add", "-d", PRINTER, "-m", driver, "-v",
             f"socket://127.0.0.1:{DEVICE_PORT}", "-o", f"media-ready={media}"],
            env=env, capture_output=True, text=True, timeout=30,
            **user,  # type: ignore[arg-type]
        )  # fmt: skip
        if add.returncode != 0:
            print(f"lprint add failed: {add.stdout}{add.stderr}", file=sys.stderr)
            return 1
        (root / "ready").write_text(f"{sock}\n")
        while not stop.is_set() and server.poll() is None:
            stop.wait(0.2)
        return 0 if stop.is_set() else 1
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(5)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(5)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]))
