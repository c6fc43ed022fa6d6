// Generated sources live next to this file once Proto/generate.sh has run.
#include "CHomeroomProto.h"
