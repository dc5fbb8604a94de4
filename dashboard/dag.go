package dashboard

import (
	"strconv"
	"strings"

	"github.com/chokaq/chokaq-go/jobs"
)

// A workflow's graph is drawn on the server as inline SVG, like the charts
// (ADR 0022): a layered layout, each task in the column of its depth (the
// longest path to it from a task without parents) and, within a column,
// in the store's order of the tasks, so the same workflow always draws the
// same. Past maxDrawnTasks tasks or maxDrawnEdges edges the page shows a
// summary by state instead: a drawing that large is neither readable nor
// cheap to send.

// Bounds of the drawing.
const (
	maxDrawnTasks = 500
	maxDrawnEdges = 2000
)

// Node geometry, in SVG user units.
const (
	dagPad     = 16
	nodeWidth  = 150
	nodeHeight = 30
	colGap     = 60 // between one column's right edge and the next's left
	rowGap     = 14
	nodeChars  = 18 // a longer task name is cut, with its full name in the title
)

// Task states as the dashboard shows them; each is a CSS class wf-<state>.
const (
	taskWaiting   = "waiting"
	taskPending   = "pending"
	taskRunning   = "running"
	taskSucceeded = "succeeded"
	taskFailed    = "failed"
)

// taskStates are the states in the legend's order.
var taskStates = []string{taskWaiting, taskPending, taskRunning, taskSucceeded, taskFailed}

// taskState is where a task is: in the DLQ (failed), archived (succeeded),
// or hot and waiting for a parent, pending, or fetched or processing.
func taskState(t jobs.WorkflowTaskState) string {
	switch {
	case t.Table == jobs.TableArchive:
		return taskSucceeded
	case t.Table == jobs.TableDLQ:
		return taskFailed
	case t.WaitingOn > 0 || t.WaitingOnFailed:
		return taskWaiting
	case t.Status == jobs.StatusPending:
		return taskPending
	}
	return taskRunning
}

// dagNode is one task's box.
type dagNode struct {
	Name, Label, State string
	JobID              int64
	X, Y               int
	// TextX and TextY place the label.
	TextX, TextY int
}

// dagEdge is a parent-to-child path, from the parent's right edge to the
// child's left one.
type dagEdge struct {
	D string // the path's d attribute
	// State is the parent's: an edge from a failed parent is drawn as one.
	State string
}

// dagDrawing is the SVG's geometry.
type dagDrawing struct {
	Width, Height         int
	NodeWidth, NodeHeight int
	Nodes                 []dagNode
	Edges                 []dagEdge
}

// layoutDAG places the tasks (parents before children, as
// jobs.WorkflowDetail has them) in columns by depth. A parent the list
// lacks (a task trimmed by retention) is left out, with its edge.
func layoutDAG(tasks []jobs.WorkflowTaskState) dagDrawing {
	index := make(map[string]int, len(tasks))
	depth := make([]int, len(tasks))
	for i, t := range tasks {
		index[t.Name] = i
		for _, p := range t.Parents {
			if j, ok := index[p]; ok {
				depth[i] = max(depth[i], depth[j]+1)
			}
		}
	}
	var rows []int // rows[c] is how many tasks column c has so far
	d := dagDrawing{NodeWidth: nodeWidth, NodeHeight: nodeHeight, Nodes: make([]dagNode, len(tasks))}
	for i, t := range tasks {
		c := depth[i]
		for len(rows) <= c {
			rows = append(rows, 0)
		}
		x := dagPad + c*(nodeWidth+colGap)
		y := dagPad + rows[c]*(nodeHeight+rowGap)
		rows[c]++
		d.Nodes[i] = dagNode{Name: t.Name, Label: cut(t.Name, nodeChars), State: taskState(t), JobID: t.JobID,
			X: x, Y: y, TextX: x + 8, TextY: y + nodeHeight/2 + 4}
	}
	tallest := 0
	for _, n := range rows {
		tallest = max(tallest, n)
	}
	d.Width = 2*dagPad + len(rows)*nodeWidth + max(len(rows)-1, 0)*colGap
	d.Height = 2*dagPad + tallest*nodeHeight + max(tallest-1, 0)*rowGap
	for i, t := range tasks {
		child := d.Nodes[i]
		for _, p := range t.Parents {
			j, ok := index[p]
			if !ok {
				continue
			}
			parent := d.Nodes[j]
			x1, y1 := parent.X+nodeWidth, parent.Y+nodeHeight/2
			x2, y2 := child.X, child.Y+nodeHeight/2
			mid := (x1 + x2) / 2
			d.Edges = append(d.Edges, dagEdge{State: parent.State, D: "M" + pt(x1, y1) + " C" + pt(mid, y1) + " " + pt(mid, y2) + " " + pt(x2, y2)})
		}
	}
	return d
}

func pt(x, y int) string { return strconv.Itoa(x) + "," + strconv.Itoa(y) }

// cut shortens s to n characters, the last an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// edgeCount is how many edges the drawing of tasks would have.
func edgeCount(tasks []jobs.WorkflowTaskState) int {
	n := 0
	for _, t := range tasks {
		n += len(t.Parents)
	}
	return n
}
