/* placeholder, being written */
#include "solver.h"
