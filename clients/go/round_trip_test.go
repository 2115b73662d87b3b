package loom_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	loom "github.com/loom-dev/loom/clients/go"
	"github.com/loom-dev/loom/clients/go/loomv1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The round trip a service written in Go makes through loom's gRPC API, against a running loom: LOOM_ADDRESS and
// LOOM_TOKEN (clients/test/clients.test.ts starts one and runs these tests).

const name = "Go round trip"

const workflow = `name: Go round trip
resources:
  Results:
    kind: graph.AgeDatabase
    parameters: { host: embedded, user: postgres, graph: go_round_trip }
components:
  Orders: source.Inlet
  Price:
    kind: processor.MessageTransformer
    options:
      language: javascript
      script: "if (typeof body.quantity !== 'number') throw new Error('quantity is not a number'); return { ...body, total: body.quantity * body.price };"
  Save:
    kind: persistence.GraphDatabaseWriter
    resource: Results
    options:
      query: "MERGE (o:Order {id: $id}) SET o.total = $total"
links:
  - Orders -> Price -> Save
`

// loomAt is the address of the loom under test; the test is skipped, saying why, when none is given.
func loomAt(t *testing.T) string {
	address := os.Getenv("LOOM_ADDRESS")
	if address == "" {
		t.Skip("LOOM_ADDRESS is not set: run through clients/test/clients.test.ts, which starts loom")
	}
	return address
}

func connect(t *testing.T, token string) *loom.Client {
	client, err := loom.Connect(loomAt(t), token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func TestRefusesACallWithoutTheToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := connect(t, "").ListWorkflows(ctx)
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListWorkflows without a token: want UNAUTHENTICATED, got %v", err)
	}
}

func TestRefusesAWrongKindNamingIt(t *testing.T) {
	client := connect(t, os.Getenv("LOOM_TOKEN"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := client.PushWorkflow(ctx, "name: Go typo\ncomponents:\n  In: source.Inlet\n  Log: sink.Loger\nlinks:\n  - In -> Log\n", "typo.workflow.yaml")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "did you mean sink.Logger?") {
		t.Fatalf("PushWorkflow with sink.Loger: want INVALID_ARGUMENT suggesting sink.Logger, got %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	client := connect(t, os.Getenv("LOOM_TOKEN"))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	pushed, err := client.PushWorkflow(ctx, workflow, "go-round-trip.workflow.yaml")
	if err != nil {
		t.Fatalf("PushWorkflow: %v", err)
	}
	if !pushed.GetSummary().GetValid() || !strings.HasPrefix(pushed.GetSummary().GetName(), name+"_") {
		t.Fatalf("PushWorkflow: want a valid %q_<uuid>, got %v", name, pushed.GetSummary())
	}
	listed, err := client.ListWorkflows(ctx)
	if err != nil {
		t.Fatalf("ListWorkflows: %v", err)
	}
	if !contains(listed, pushed.GetSummary().GetName()) {
		t.Fatalf("ListWorkflows: %s is not among %v", pushed.GetSummary().GetName(), listed)
	}

	started, err := client.StartWorkflow(ctx, name)
	if err != nil || started.GetState() != loomv1.WorkflowState_WORKFLOW_STATE_RUNNING {
		t.Fatalf("StartWorkflow: want RUNNING, got %v (%v)", started.GetState(), err)
	}
	events, err := client.WatchRun(ctx, name)
	if err != nil {
		t.Fatalf("WatchRun: %v", err)
	}
	if first, err := events.Recv(); err != nil || first.GetState() != loomv1.WorkflowState_WORKFLOW_STATE_RUNNING {
		t.Fatalf("WatchRun's first event: want RUNNING, got %v (%v)", first, err)
	}
	// the same file again changes nothing: no new version, and the run goes on (the watch sees no restart below); a
	// start of the running workflow answers its run
	again, err := client.PushWorkflow(ctx, workflow, "go-round-trip.workflow.yaml")
	if err != nil || !again.GetUnchanged() || again.GetMetadata().GetVersion() != pushed.GetMetadata().GetVersion() {
		t.Fatalf("PushWorkflow of the same file: want unchanged at version %d, got %v (%v)", pushed.GetMetadata().GetVersion(), again, err)
	}
	restarted, err := client.StartWorkflow(ctx, name)
	if err != nil || !restarted.GetAlreadyRunning() || restarted.GetRunId() != started.GetRunId() || restarted.GetState() != loomv1.WorkflowState_WORKFLOW_STATE_RUNNING {
		t.Fatalf("StartWorkflow on the running workflow: want OK, already running, run %s, got %v (%v)", started.GetRunId(), restarted, err)
	}

	accepted, err := client.Publish(ctx, name, "Orders", map[string]any{"id": "go-1", "quantity": 3, "price": 2.5}, "go-1")
	if err != nil || accepted.GetMessageId() != "go-1" || accepted.GetDuplicate() {
		t.Fatalf("Publish: want go-1 accepted once, got %v (%v)", accepted, err)
	}
	duplicate, err := client.Publish(ctx, name, "Orders", map[string]any{"id": "go-1", "quantity": 3, "price": 2.5}, "go-1")
	if err != nil || !duplicate.GetDuplicate() {
		t.Fatalf("Publish of go-1 again: want duplicate, got %v (%v)", duplicate, err)
	}
	// the watch sees the next message fail in the script, by name and typed
	if _, err := client.Publish(ctx, name, "Orders", map[string]any{"id": "go-2", "quantity": "three", "price": 2.5}, "go-2"); err != nil {
		t.Fatalf("Publish go-2: %v", err)
	}
	for {
		event, err := events.Recv()
		if err != nil {
			t.Fatalf("WatchRun ended before the component error: %v", err)
		}
		if event.GetComponent() == "" {
			if event.GetState() != loomv1.WorkflowState_WORKFLOW_STATE_RUNNING {
				t.Fatalf("WatchRun: the run left RUNNING before the component error: %v", event)
			}
			continue
		}
		if !strings.HasPrefix(event.GetComponent(), "Price_") || !strings.Contains(event.GetError(), "quantity is not a number") ||
			event.GetFailure().GetKind() != "invalid-argument" || event.GetFailure().GetRetryable() {
			t.Fatalf("WatchRun: want Price's error typed, got %v", event)
		}
		break
	}

	if _, err := client.StopWorkflow(ctx, name); err != nil {
		t.Fatalf("StopWorkflow: %v", err)
	}
	last := loomv1.WorkflowState_WORKFLOW_STATE_UNSPECIFIED
	for {
		event, err := events.Recv()
		if err != nil {
			break
		}
		last = event.GetState()
	}
	if last != loomv1.WorkflowState_WORKFLOW_STATE_STOPPED {
		t.Fatalf("WatchRun's last event: want STOPPED, got %v", last)
	}

	// a stop lets the messages in flight finish: go-1 is in the graph once the run has stopped
	read, err := client.ReadGraph(ctx, &loomv1.ReadGraphRequest{Query: "MATCH (o:Order) RETURN o.id AS id, o.total AS total ORDER BY id", Graph: "go_round_trip"})
	if err != nil {
		t.Fatalf("ReadGraph: %v", err)
	}
	if got := strings.Join(read.GetColumns(), ","); got != "id,total" {
		t.Fatalf("ReadGraph's columns: want id,total, got %s", got)
	}
	if len(read.GetRows()) != 1 || read.GetRows()[0].AsMap()["id"] != "go-1" || read.GetRows()[0].AsMap()["total"] != 7.5 || read.GetStore() != "embedded" {
		t.Fatalf("ReadGraph: want one row {id: go-1, total: 7.5} from the embedded graph, got %v", read)
	}
}

func contains(summaries []*loomv1.WorkflowSummary, name string) bool {
	for _, summary := range summaries {
		if summary.GetName() == name {
			return true
		}
	}
	return false
}
