#include <stdio.h>
#include "greet.h"

int greet(const struct person *p) {
    return printf("hello, %s\n", p->name);
}
