"""Which Landlock this kernel has, and the one warning of start-up about it.

Apart from `core/sandbox.py`, which builds the rulesets and starts the launcher: start-up asks
only this (whether auto mode can confine the commands), and importing the sandbox with its
launcher cost the way to a ready window about 3 ms (docs/performance.md). The sandbox takes
these from here."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Mapping
from typing import Any

FAKE_ABI_VARIABLE = "MM_SANDBOX_FAKE_ABI"
"""`0` in mm's environment: behave as on a kernel without Landlock; `N` caps the ABI at N."""

SYS_CREATE_RULESET = 444  # the same number on every architecture since Linux 5.13
CREATE_RULESET_VERSION = 1  # landlock_create_ruleset's flag: tell the ABI version

_libc_handle: Any = None
_real_abi: tuple[int, str] | None = None


def libc() -> Any:
    """The C library, through ctypes (loaded at the first need: ctypes is slow to import)."""
    global _libc_handle
    if _libc_handle is None:
        import ctypes

        handle = ctypes.CDLL(None, use_errno=True)
        handle.syscall.restype = ctypes.c_long
        handle.prctl.restype = ctypes.c_int
        _libc_handle = handle
    return _libc_handle


def _kernel_abi() -> tuple[int, str]:
    """Landlock's ABI version on this kernel (0 when it has none) and, for 0, why."""
    global _real_abi
    if _real_abi is None:
        _real_abi = _ask_kernel()
    return _real_abi


def _ask_kernel() -> tuple[int, str]:
    if not sys.platform.startswith("linux"):
        return (
            0,
            f"Landlock is Linux only, this is {sys.platform} (on macOS, sandbox-exec is "
            "the next step, not built yet)",
        )
    import ctypes

    try:
        abi = libc().syscall(
            ctypes.c_long(SYS_CREATE_RULESET),
            ctypes.c_void_p(None),
            ctypes.c_size_t(0),
            ctypes.c_uint32(CREATE_RULESET_VERSION),
        )
        err = ctypes.get_errno()
    except (OSError, AttributeError) as exc:
        return (0, f"Landlock cannot be called ({exc})")
    if abi > 0:
        return (int(abi), "")
    if err == errno.EOPNOTSUPP:
        return (
            0,
            "Landlock is turned off in this kernel (add landlock to its lsm= boot parameter)",
        )
    return (
        0,
        "this kernel has no Landlock (it needs Linux 5.13 or later built with "
        "CONFIG_SECURITY_LANDLOCK)",
    )


def landlock_abi(environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """The ABI in force (0: none) and, for 0, why; `MM_SANDBOX_FAKE_ABI` caps it."""
    environ = os.environ if environ is None else environ
    abi, why = _kernel_abi()
    fake = environ.get(FAKE_ABI_VARIABLE, "")
    if fake.strip().isdigit() and int(fake) < abi:
        abi = int(fake)
        if abi == 0:
            why = f"this kernel has no Landlock (simulated by {FAKE_ABI_VARIABLE}=0)"
    return abi, why


def startup_warning(mode: str, network: bool) -> str | None:
    """The one warning of start-up in auto mode when commands cannot be confined (or the network
    cannot be turned off); None when all is well, or the mode is off or strict (strict says it at
    each command instead). `mode` and `network`: the `sandbox` and `sandboxNetwork` settings."""
    if mode != "auto":
        return None
    abi, why = landlock_abi()
    if abi < 1:
        return (
            f"[warning: sandbox: {why} — commands run unconfined; set sandbox: strict to "
            "refuse them instead]"
        )
    if not network and abi < 4:
        return (
            f"[warning: sandbox: this kernel's Landlock (ABI {abi}) cannot turn the network off "
            "(ABI 4, Linux 6.7, is needed) — commands keep the network]"
        )
    return None
