// topotune-agent: the per-node agent of topotune. All of it lives in the
// topotune::agent library (agent/cli.h).
#include "agent/cli.h"

int main(int argc, char** argv) { return topotune::agent::Main(argc, argv); }
