#ifndef GREET_H
#define GREET_H

struct person {
    const char *name;
    int age;
};

/* greet prints a greeting for p */
int greet(const struct person *p);

#endif
