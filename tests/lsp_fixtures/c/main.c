#include "greet.h"

// main greets two people
int main(void) {
    struct person alice = {"alice", 30};
    struct person bob = {"bob", 40};
    greet(&alice);
    return greet(&bob);
}
