import sys
from pathlib import Path

# Test helpers (the scripted server, the scripted model) are imported by name.
sys.path.insert(0, str(Path(__file__).parent))
