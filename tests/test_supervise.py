"""bin/supervise.sh, which `make run` (bin/run) uses for SurrealDB, the worker and the web
server: a child that dies is restarted, the others run on, Ctrl-C stops every one."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

from django.conf import settings

SUPERVISE = Path(settings.BASE_DIR) / "bin" / "supervise.sh"


class Driver:
    """A bash script that sources bin/supervise.sh, and the lines it prints."""

    def __init__(self, script: str, tmp_path: Path, sigint: str = "default"):
        path = tmp_path / "driver.sh"
        path.write_text(f"set -euo pipefail\nsource {SUPERVISE}\n{script}\n")
        # As from a terminal, SIGINT at its default whatever this run inherited: a run
        # started in the background (`make test &`) ignores it, and a shell cannot trap
        # a signal ignored when it started.
        self.process = subprocess.Popen(
            ["env", f"--{sigint}-signal=INT", "bash", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "SUPERVISE_GRACE": "1"},
            start_new_session=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def expect(self, pattern: str, timeout: float = 10) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            self.seen.append(line)
            if match := re.search(pattern, line):
                return match
        raise AssertionError(f"no line like {pattern!r}; saw {self.seen}")

    def started(self, name: str) -> int:
        return int(self.expect(rf"^run: {name} started \(pid (\d+)\)$").group(1))

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


def group_alive(pgid: int, timeout: float = 2) -> bool:
    """Whether a live (not zombie) process is in group `pgid`; a child just forked may
    still be on its way to setsid: give it `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rpartition(")")[2].split()
            except OSError:
                continue  # gone meanwhile
            if fields[0] != "Z" and int(fields[2]) == pgid:
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_a_dead_child_is_restarted_and_ctrl_c_stops_them_all(tmp_path: Path) -> None:
    driver = Driver(
        "supervise web - sleep 300\n"
        # A child that ignores SIGTERM and has a child of its own, logging to a file.
        f"supervise worker {tmp_path / 'worker.log'} bash -c "
        "'trap \"\" TERM; echo worker up; sleep 300 & wait'\n"
        "supervise_wait",
        tmp_path,
    )
    try:
        web, worker = driver.started("web"), driver.started("worker")
        os.kill(web, signal.SIGKILL)
        driver.expect(r"^run: web exited \(status 137\); restarting it in 1s")
        web_again = driver.started("web")
        assert web_again != web and group_alive(web_again)
        assert group_alive(worker)  # the others run on
        # Dying again soon after its start: the pause before the next restart doubles.
        os.kill(web_again, signal.SIGKILL)
        driver.expect(r"^run: web exited \(status 137\); restarting it in 2s")
        web_third = driver.started("web")
        assert "worker up" in (tmp_path / "worker.log").read_text()

        driver.process.send_signal(signal.SIGINT)  # Ctrl-C
        assert driver.process.wait(15) == 0
        driver.expect(r"^run: stopping")
        assert not group_alive(web_third, timeout=0)
        assert not group_alive(worker, timeout=0)  # ignored SIGTERM: killed after the grace
    finally:
        driver.close()


def test_an_error_before_supervising_stops_what_was_started(tmp_path: Path) -> None:
    driver = Driver("supervise surreal - sleep 300\nfalse\nsupervise_wait", tmp_path)
    try:
        surreal = driver.started("surreal")
        assert driver.process.wait(15) == 1
        assert not group_alive(surreal, timeout=0)
    finally:
        driver.close()


def test_sigterm_stops_them_all_even_where_ctrl_c_is_ignored(tmp_path: Path) -> None:
    driver = Driver("supervise web - sleep 300\nsupervise_wait", tmp_path, sigint="ignore")
    try:
        web = driver.started("web")
        driver.process.send_signal(signal.SIGTERM)
        assert driver.process.wait(15) == 0
        assert not group_alive(web, timeout=0)
    finally:
        driver.close()
