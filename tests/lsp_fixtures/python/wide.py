wörd_count = 3
label = "héllo 👋 wörld" + str(wörd_count)  # 👍 é
