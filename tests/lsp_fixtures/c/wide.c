static int count = 3;
static const char *label = "héllo 👋 wörld"; static int total = 1;

int sum(void) {
    return count + total + (label != 0);
}
