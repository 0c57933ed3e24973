"""The warm interpreter runs a script as `python script args` would: status, output, argv, cwd,
environment, `__main__`, and spawned workers that pickle the script's own classes."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from warm_interpreter import WarmInterpreter


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmInterpreter]:
    """A server that preloads nothing: these tests are about the forking, not the imports."""
    interpreter = WarmInterpreter(dict(os.environ), tmp_path_factory.mktemp("home"), preload=())
    yield interpreter
    interpreter.close()


def _script(folder: Path, body: str) -> Path:
    script = folder / "script.py"
    script.write_text(textwrap.dedent(body), encoding="utf-8")
    return script


def test_a_script_sees_its_argv_cwd_environment_and_main(
    warm: WarmInterpreter, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    script = _script(
        tmp_path,
        """
        import os, sys
        print(__name__, sys.argv[1:], os.getcwd(), os.environ["ONLY_HERE"], sys.path[0])
        print("to stderr", file=sys.stderr)
        """,
    )
    workdir = tmp_path_factory.mktemp("cwd")
    done = warm.run(
        script,
        ["--quick", "x"],
        cwd=workdir,
        environment={**os.environ, "ONLY_HERE": "yes"},
        output_dir=tmp_path_factory.mktemp("out"),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "__main__",
        "['--quick',",
        "'x']",
        str(workdir),
        "yes",
        str(tmp_path),
    ]
    assert done.stderr == "to stderr\n"
    assert "ONLY_HERE" not in os.environ


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        ("raise SystemExit(3)", 3, ""),
        ("raise SystemExit('a message')", 1, "a message"),
        ("raise ValueError('broken')", 1, "ValueError: broken"),
        ("import sys; sys.exit()", 0, ""),
    ],
)
def test_the_status_is_the_scripts(
    warm: WarmInterpreter,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    body: str,
    status: int,
    said: str,
) -> None:
    done = warm.run(
        _script(tmp_path, body),
        [],
        cwd=tmp_path,
        environment=os.environ,
        output_dir=tmp_path_factory.mktemp("out"),
        timeout=60,
    )
    assert done.returncode == status
    assert said in done.stderr


def test_spawned_workers_pickle_the_scripts_classes(
    warm: WarmInterpreter, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """multiprocessing aliases `__mp_main__` to the server's module when it is imported; a
    script's spawned workers must find the script's classes (bench/shared_block_bench.py)."""
    script = _script(
        tmp_path,
        """
        import multiprocessing
        from dataclasses import dataclass

        @dataclass
        class Report:
            value: int

        def work(queue):
            queue.put(Report(42))

        if __name__ == "__main__":
            spawn = multiprocessing.get_context("spawn")
            queue = spawn.Queue()
            worker = spawn.Process(target=work, args=(queue,))
            worker.start()
            print(queue.get(timeout=60).value)
            worker.join(timeout=60)
        """,
    )
    done = warm.run(
        script,
        [],
        cwd=tmp_path,
        environment={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        output_dir=tmp_path_factory.mktemp("out"),
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (0, "42\n"), done.stderr


def test_a_client_holding_many_descriptors_still_reads_answers(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A pytest worker may hold more than 1,024 descriptors, and then the pipe to a server started
    later gets a number `select` refuses (the whole quick-run file once failed so)."""
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1_100)]
    try:
        late = WarmInterpreter(dict(os.environ), tmp_path_factory.mktemp("home"), preload=())
        try:
            done = late.run(
                _script(tmp_path, "print('ok')"),
                [],
                cwd=tmp_path,
                environment=os.environ,
                output_dir=tmp_path_factory.mktemp("out"),
                timeout=60,
            )
        finally:
            late.close()
    finally:
        for descriptor in held:
            os.close(descriptor)
    assert (done.returncode, done.stdout) == (0, "ok\n")
