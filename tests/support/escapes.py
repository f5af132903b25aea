"""The payloads of the escape-sequence tests, shared by the line mode's and the window's: each
source has its own, so that what reaches the output says where it came from."""

OSC52 = "\x1b]52;c;{}\x07"
TITLE = "\x1b]0;{}\x07"
SOURCES = {
    "bash output": "QkFTSE9VVA==",
    "read_file output": "RklMRU9VVA==",
    "a tool argument": "QVJHVU1FTlQ=",
    "a file name": "RklMRU5BTUU=",
    "the answer": "QU5TV0VS",
    "the reasoning": "UkVBU09OSU5H",
}
SPOOF = "rm -f important.txt; echo gone #\x1b[2K\x1b[1G\x1b[1A\x1b[2Kls -la"
"""The spoof of the permission question: the escapes erase the line and draw `ls -la`."""
