// viz/graphviz.h — the graph drawn: what a result reaches, in Graphviz's DOT language.
#pragma once
#include <string>

#include "engine/tape.h"
#include "engine/tensor.h"

namespace hg {

// The graph that produced `root`, as DOT (render it with `dot -Tsvg graph.dot -o graph.svg`):
//  - a box per node, numbered as tape_str numbers it (#0 recorded first, backward runs last to
//    first), with its op, each output's name, shape and dtype, what it saved for its backward,
//    and "freed by backward" once a backward without retain_graph dropped those;
//  - a rounded box per leaf that wants a gradient, by name, with "grad (shape)" once a backward
//    has filled its .grad; constants (inputs that need none) dashed and grey;
//  - an edge per input, from the node that produced it (or its leaf) to the node that read it,
//    so `b = a + a` draws two edges.
// The root's node is drawn bold and filled. A leaf root draws alone; an undefined one, nothing.
std::string to_dot(const Tensor& root);

// What a node saved, by the name its tensor has where it has one: "P (left operand a)" for the
// left operand of the product O = P V; the op's own words ("left operand a") otherwise.
std::string saved_name(const Node& node, const SavedTensor& saved);

}  // namespace hg
