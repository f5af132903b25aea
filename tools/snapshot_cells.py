"""Compare two Textual snapshot SVGs cell by cell: (char, fg class style, bg)."""
import re, sys, html
CW, LH = 12.2, 24.4
def grid(path):
    s = open(path).read()
    styles = dict(re.findall(r'\.(terminal-r\d+) \{ ([^}]*)\}', s))
    cells = {}
    for m in re.finditer(r'<rect fill="(#[0-9a-f]+)" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="[\d.]+" shape-rendering="crispEdges"/>', s):
        fill, x, y, w = m.group(1), float(m.group(2)), float(m.group(3)), float(m.group(4))
        row = round(y / LH); c0 = round(x / CW); n = round(w / CW)
        for c in range(c0, c0 + n):
            cells.setdefault((row, c), {})["bg"] = fill
    for m in re.finditer(r'<text class="(terminal-r\d+)" x="([\d.]+)" y="([\d.]+)" textLength="([\d.]+)"[^>]*>([^<]*)</text>', s):
        cls, x, y, text = m.group(1), float(m.group(2)), float(m.group(3)), html.unescape(m.group(5))
        row = round((y - 20) / LH); c0 = round(x / CW)
        for i, ch in enumerate(text):
            d = cells.setdefault((row, c0 + i), {})
            d["ch"] = ch; d["fg"] = styles.get(cls)
    return cells
a, b = grid(sys.argv[1]), grid(sys.argv[2])
diff = []
for k in sorted(set(a) | set(b)):
    da, db = a.get(k, {}), b.get(k, {})
    ca, cb = da.get("ch", " ").replace("\xa0", " "), db.get("ch", " ").replace("\xa0", " ")
    fa = da.get("fg") if ca != " " else None
    fb = db.get("fg") if cb != " " else None
    if ca != cb or fa != fb or da.get("bg") != db.get("bg"):
        diff.append((k, (ca, fa, da.get("bg")), (cb, fb, db.get("bg"))))
print(sys.argv[1].split("/")[-1], "differing cells:", len(diff))
for d in diff[:8]:
    print("  ", d)
