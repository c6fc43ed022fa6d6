// Umbrella header; protoc-c output is added by Proto/generate.sh.
#include <protobuf-c/protobuf-c.h>
