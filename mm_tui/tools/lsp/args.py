"""The lsp tool's arguments as the model gives them, and as the actions take them.

A small model names the action loosely (`goto_definition`, `outline`) and the symbol with what
surrounds it (`func greet`, a rename packed into one field: `Greet 1 12 Hello`); the call is
cleaned once here, into what the actions point at.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from mm_tui.tools.args import ToolArgs
from mm_tui.tools.base import ToolContext
from mm_tui.tools.lsp.symbols import clean_symbol, split_rename, symbol_from_words

ACTIONS = ("definition", "references", "hover", "symbols", "diagnostics", "rename")
_ALIASES = {
    "definitions": "definition",
    "goto_definition": "definition",
    "reference": "references",
    "find_references": "references",
    "symbol": "symbols",
    "document_symbols": "symbols",
    "outline": "symbols",
    "diagnostic": "diagnostics",
}
NEEDS_POSITION = ("definition", "references", "hover", "rename")


class LspArgs(ToolArgs):
    action: str = Field(
        description=("definition, references, hover, symbols, diagnostics or rename."),
        json_schema_extra={"enum": list(ACTIONS)},
    )
    path: str = Field(
        description="File path, relative to the working directory. Its extension picks the server."
    )
    symbol: str = Field(
        "",
        description=(
            "The identifier, as written in the code (`Greet`, `person.Greet`). Its occurrences "
            "in the file are tried in order. For definition, references, hover, rename."
        ),
    )
    line: int = Field(
        0,
        description=(
            "1-based line. With symbol: restricts the search to that line. With column: the "
            "exact position."
        ),
    )
    column: int = Field(
        0,
        description=(
            "1-based column, in characters, pointing inside the identifier. Only needed "
            "without symbol."
        ),
    )
    new_name: str = Field(default="", description="The new identifier, for rename.")


@dataclass
class Call:
    """One call's arguments, cleaned: the action, the file, and what to point at."""

    action: str
    raw_path: str
    path: Path
    symbol: str
    new_name: str
    line: int
    column: int
    hint: tuple[int, int] | None = None  # line, column found inside a several-word rename symbol


def normalize_action(action: str) -> str:
    a = action.strip().lower().replace("-", "_").replace(" ", "_")
    return _ALIASES.get(a, a)


def prepare_call(args: LspArgs, ctx: ToolContext) -> Call:
    action = normalize_action(args.action)
    if action == "rename":
        symbol = clean_symbol(args.symbol) if len(args.symbol.split()) < 2 else ""
        new_name = clean_symbol(args.new_name)
        hint = None
        if len(args.symbol.split()) >= 2:
            first, last, numbers = split_rename(args.symbol)
            symbol = first
            if not new_name:
                new_name = last
            if numbers and args.line <= 0:
                hint = (numbers[0], numbers[1] if len(numbers) > 1 else 0)
    else:
        symbol = symbol_from_words(args.symbol)
        new_name = clean_symbol(args.new_name)
        hint = None
    return Call(
        action=action,
        raw_path=args.path,
        path=ctx.resolve(args.path),
        symbol=symbol,
        new_name=new_name,
        line=max(0, args.line),
        column=max(0, args.column),
        hint=hint,
    )
