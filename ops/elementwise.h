// ops/elementwise.h — the elementwise ops and their operators, declared in ops/primitives.h with
// the other ops whose derivatives are written with one another.
#pragma once
#include "ops/primitives.h"
