#pragma once
/* GNU libmicrohttpd: the HTTP server of the web console and of GET /metrics. It wants the
   socket types declared before its header. */
#include <stdint.h>
#include <stdarg.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>
