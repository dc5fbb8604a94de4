package jobs

import "testing"

// Normalize returns normalized tasks and leaves the caller's slice as it
// was: a caller may enqueue the same tasks twice, or read them after.
func TestWorkflowNormalizeLeavesTheCallersTasksAlone(t *testing.T) {
	tasks := []WorkflowTask{{Name: "a", Job: EnqueueParams{Type: "t"}}, {Name: "b", Job: EnqueueParams{Type: "t"}, After: []string{"a"}}}
	out, err := WorkflowParams{Name: "w", Tasks: tasks}.Normalize(Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Tasks[0].Job.Queue == "" || out.Tasks[0].Job.MaxAttempts == 0 {
		t.Fatalf("not normalized: %+v", out.Tasks[0].Job)
	}
	if tasks[0].Job.Queue != "" || tasks[0].Job.MaxAttempts != 0 {
		t.Errorf("the caller's task was changed: %+v", tasks[0].Job)
	}
}
