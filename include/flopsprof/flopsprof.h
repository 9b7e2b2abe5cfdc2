// Umbrella header: the whole public API of flopsprof (optional backends have their own headers).
#pragma once

#include "flopsprof/config.h"
#include "flopsprof/error.h"
#include "flopsprof/exported.h"
#include "flopsprof/formulas.h"
#include "flopsprof/machine.h"
#include "flopsprof/meta.h"
#include "flopsprof/op_profiler.h"
#include "flopsprof/profiler.h"
#include "flopsprof/report.h"
#include "flopsprof/roofline.h"
#include "flopsprof/scope.h"
#include "flopsprof/sweep.h"
#include "flopsprof/timer.h"
