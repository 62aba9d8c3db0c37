#pragma once
/* libxcrypt (Debian's libcrypt): yescrypt password hashes, as /etc/shadow has them. */
#include <crypt.h>
