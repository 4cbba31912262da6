// topotune: the admin command line. All of it lives in the topotune::cli
// library (daemon/cli/cli.h); this file only hands over argv and the streams.
#include <iostream>

#include "daemon/cli/cli.h"

int main(int argc, char** argv) { return topotune::cli::Run(argc, argv, std::cout, std::cerr); }
