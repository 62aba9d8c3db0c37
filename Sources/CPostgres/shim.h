#pragma once
#include <libpq-fe.h>

// The diagnostic field codes are character-literal macros ('C', 'M', …), which Swift does not
// import: one constant each.
static const int pf_pg_diag_sqlstate = PG_DIAG_SQLSTATE;
static const int pf_pg_diag_message_primary = PG_DIAG_MESSAGE_PRIMARY;
static const int pf_pg_diag_message_detail = PG_DIAG_MESSAGE_DETAIL;
