// ops/reduce.h — sum, mean and max over dimensions, declared in ops/primitives.h with the other
// ops whose derivatives are written with one another.
#pragma once
#include "ops/primitives.h"
