"""The environment of the commands the model chooses: mm's own without its secrets.

A bash command copied `os.environ`, so the model could run `curl … -H "Authorization: Bearer
$OPENAI_API_KEY"` against any host, or print a token that the redactor does not know. Every
process mm starts for the model (a bash command, a language server) gets `command_env()`
instead, which leaves out:

- mm's own key variables, `MM_API_KEY` and `OPENAI_API_KEY` (`redact.ENV_VARIABLES`), always,
  whatever the exclude list says: nothing the model runs needs mm's key;
- every variable whose name matches a pattern of the `commandEnvExclude` setting (shell globs,
  `*` `?` `[…]`, matched without regard to case; an empty list keeps those), by default
  `DEFAULT_EXCLUDE`: a name that holds `SECRET`, `PASSWORD`, `PASSWD` or `CREDENTIAL`, ends in
  `KEY`, `_KEYS`, `_PAT`, `_PASS` or `_PWD`, or has `TOKEN` as a word (`GITHUB_TOKEN`,
  `TOKEN_FILE`, `GH_TOKENS`);
- any variable whose value is one of the keys mm holds (`secrets`: the configured key, which a
  person may keep in a variable of their own name, `GROQ_KEY` say), when it is long enough to
  be a key (`redact.MIN_LENGTH`: placeholder keys such as `ollama` are no secret).

Not for mm's own children: an asked agent (`mm -acp`, acp_client/pool.py) is mm itself, which
needs the key to reach its model, and keeps the whole environment.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mm_tui.core.redact import ENV_VARIABLES, MIN_LENGTH

DEFAULT_EXCLUDE: tuple[str, ...] = (
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*TOKEN",
    "*TOKEN_*",
    "*TOKENS",
    "*KEY",
    "*_KEYS",
    "*_PAT",
    "*_PASS",
    "*_PWD",
)
"""The `commandEnvExclude` setting's default. Left out, for instance: `AWS_SECRET_ACCESS_KEY`,
`SECRET_KEY`, `STRIPE_SECRET_KEY`, `DB_PASSWORD`, `MYSQL_PWD`, `GITHUB_PAT`, `MY_PASS`,
`GOOGLE_APPLICATION_CREDENTIALS` (a path to a key file), `HF_TOKEN`, every `*_API_KEY`; and, as
the price of a simple rule, `SECRETS_DIR` or `PASSWORD_STORE_DIR`, which only name folders.

Kept on purpose: `PATH`, `PWD` and `OLDPWD` (no `_` before them), `TOKENIZERS_PARALLELISM`
(`TOKEN` is not a word there), `KEYBOARD…`-like names (`KEY` only at the end), `AWS_ACCESS_KEY_ID`
(an identifier, useless without its secret), and the agent sockets `SSH_AUTH_SOCK` and
`GPG_AGENT_INFO`: they hold no secret but the way to a process that signs with one, and leaving
them out would not keep a command from that process (the socket's path is found by listing
`/tmp` or `$XDG_RUNTIME_DIR`, and the sandbox does not cover Unix sockets), only break `git push`
over SSH and signed commits. A person who wants them out adds them to the list."""

ALWAYS_EXCLUDED: tuple[str, ...] = ENV_VARIABLES
"""mm's own key variables, left out whatever the exclude list says."""


def excluded(name: str, patterns: Iterable[str] = DEFAULT_EXCLUDE) -> bool:
    """Whether the variable `name` is kept from commands: one of mm's own keys, or matching one
    of `patterns` (case-insensitive globs)."""
    upper = name.upper()
    if upper in ALWAYS_EXCLUDED:
        return True
    return _matcher(tuple(patterns))(upper) is not None


@functools.lru_cache(maxsize=16)
def _matcher(patterns: tuple[str, ...]) -> Callable[[str], re.Match[str] | None]:
    """The patterns as one compiled expression over upper-cased names: a command's environment
    is some forty names against a dozen globs at every bash call, which fnmatch one pair at a
    time made a third of a millisecond."""
    if not patterns:
        return lambda name: None
    either = "|".join(f"(?:{fnmatch.translate(p.upper())})" for p in patterns)
    return re.compile(either).match


def command_env(
    exclude: Iterable[str] = DEFAULT_EXCLUDE,
    *,
    secrets: Iterable[str | None] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A copy of `environ` (this process's by default) for a command the model runs: without
    mm's key variables, the variables `exclude` matches, and those holding one of `secrets`.

    Of this process's environment the filtered result is kept and copied while the environment,
    the patterns and the secrets are the same: filtering forty names was a tenth of a
    millisecond of every bash call (bench/bench_bash.py)."""
    patterns = tuple(exclude)
    values = frozenset(s for s in secrets if s and len(s) >= MIN_LENGTH)
    if environ is not None:
        return _filtered(environ, patterns, values)
    # os.environ's own mapping (encoded names and values): a copy and a comparison of it cost
    # a microsecond where os.environ's items, decoded one by one, cost twenty
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):
        return _filtered(os.environ, patterns, values)
    key = (patterns, values)
    kept = _kept.get(key)
    if kept is None or kept[0] != raw:
        kept = (dict(raw), _filtered(os.environ, patterns, values))
        if len(_kept) >= 8:
            _kept.clear()
        _kept[key] = kept
    return dict(kept[1])


_kept: dict[tuple[tuple[str, ...], frozenset[str]], tuple[dict[Any, Any], dict[str, str]]] = {}
"""(patterns, secrets) -> (the environment it was filtered from, the result)."""


def _filtered(
    environ: Mapping[str, str], patterns: tuple[str, ...], values: frozenset[str]
) -> dict[str, str]:
    matches = _matcher(patterns)
    return {
        name: value
        for name, value in environ.items()
        if (upper := name.upper()) not in ALWAYS_EXCLUDED
        and matches(upper) is None
        and value not in values
    }
