"""Line mode (`mm --line`), one-shot `mm -p` and `mm --ask`: the front end that prints the
engine's events as lines on the terminal (`printer.py`), with its REPL (`repl.py`), the one-shot
runs (`one_shot.py`), the trust question (`trust.py`), line editing and history
(`history.py`) and the answer's Markdown drawn block by block (`stream.py`)."""
