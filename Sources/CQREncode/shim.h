#pragma once
/* libqrencode: QR code symbols (the share links' codes). */
#include <qrencode.h>
