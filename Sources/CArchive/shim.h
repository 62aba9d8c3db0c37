#pragma once
/* libarchive: a batch as one ZIP, written as it is sent (never whole in memory). */
#include <archive.h>
#include <archive_entry.h>
