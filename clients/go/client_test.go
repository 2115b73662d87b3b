package loom_test

import (
	"context"
	"strings"
	"testing"

	loom "github.com/loom-dev/loom/clients/go"
	"github.com/loom-dev/loom/clients/go/loomv1"
)

// The helper's own checks, no loom needed: bad input is refused before any call, naming the argument.

func TestConnectRefusesAnEmptyAddress(t *testing.T) {
	if _, err := loom.Connect("", "a-token-of-16-characters"); err == nil || !strings.HasPrefix(err.Error(), "address: required") {
		t.Fatalf("Connect(\"\"): want 'address: required', got %v", err)
	}
}

func TestReadGraphRefusesBothOrNeitherSource(t *testing.T) {
	client, err := loom.Connect("127.0.0.1:1", "a-token-of-16-characters")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, request := range []*loomv1.ReadGraphRequest{
		{Query: "MATCH (n) RETURN n"},
		{Query: "MATCH (n) RETURN n", Graph: "orders", Workflow: "Orders"},
	} {
		if _, err := client.ReadGraph(context.Background(), request); err == nil || !strings.HasPrefix(err.Error(), "graph, workflow: give exactly one") {
			t.Fatalf("ReadGraph(%v): want 'graph, workflow: give exactly one', got %v", request, err)
		}
	}
}

func TestPublishRefusesABodyThatIsNoJSON(t *testing.T) {
	client, err := loom.Connect("127.0.0.1:1", "a-token-of-16-characters")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Publish(context.Background(), "Orders", "Inbox", map[string]any{"c": make(chan int)}, ""); err == nil || !strings.HasPrefix(err.Error(), "body: not a JSON object") {
		t.Fatalf("Publish with a channel in the body: want 'body: not a JSON object', got %v", err)
	}
}
