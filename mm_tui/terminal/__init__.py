"""What both terminal front ends (the window and line mode) draw with: the answer's Markdown
block by block (`block_markdown.py`) and ASCII look-alikes for a terminal that cannot take UTF-8
(`ascii_terminal.py`)."""
