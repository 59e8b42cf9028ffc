/*
 * Lets bench/cycle-footprint.ts count only the cycles it measures: callgrind
 * starts with collection off (--collect-atstart=no) and this flips it.
 *
 *   cc -O2 -shared -fPIC callgrind_toggle.c -o libcallgrind_toggle.so
 *
 * Outside valgrind the client request is a few no-op instructions.
 */
#include <valgrind/callgrind.h>

void footprint_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
