#include "rcu.h"

#if defined(__SANITIZE_THREAD__)
char rcu_tsan_token;
#endif
