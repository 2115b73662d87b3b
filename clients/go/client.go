// Package loom is a small helper over loom's generated gRPC stubs (package loomv1, generated from proto/): one
// connection, the token on every call, plain Go values in and the generated messages out.
package loom

import (
	"context"
	"errors"
	"fmt"

	"github.com/loom-dev/loom/clients/go/loomv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
)

// Authorization is the metadata key loom reads a caller's token from: `authorization: Bearer <token>`.
const Authorization = "authorization"

// Client is a connection to loom: its WorkflowStore and Executor stubs (for every other RPC) and helpers for the
// usual round trip. Errors are the server's gRPC status (status.FromError gives its code and details).
type Client struct {
	conn      *grpc.ClientConn
	Workflows loomv1.WorkflowStoreClient
	Executor  loomv1.ExecutorClient
}

// bearerToken puts the token on every call. It does not demand TLS: loom's own tests and a local loom speak
// plaintext; pass grpc.WithTransportCredentials to Connect for TLS.
type bearerToken string

func (token bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{Authorization: "Bearer " + string(token)}, nil
}

func (bearerToken) RequireTransportSecurity() bool { return false }

// Connect opens a connection to loom at address (host:port), plaintext unless options say otherwise, sending token
// (when not empty) on every call. The connection is made lazily, at the first call.
func Connect(address, token string, options ...grpc.DialOption) (*Client, error) {
	if address == "" {
		return nil, errors.New("address: required, host:port")
	}
	all := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if token != "" {
		all = append(all, grpc.WithPerRPCCredentials(bearerToken(token)))
	}
	conn, err := grpc.NewClient(address, append(all, options...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to loom at %s: %w", address, err)
	}
	return &Client{conn: conn, Workflows: loomv1.NewWorkflowStoreClient(conn), Executor: loomv1.NewExecutorClient(conn)}, nil
}

// Close closes the connection.
func (client *Client) Close() error { return client.conn.Close() }

// PushWorkflow stores a workflow written in the compact form (YAML or JSON text, as `loom workflow push` reads a
// file); the answer says `unchanged` when it is the stored version already. sourceName (a file name) only names it in
// error texts.
func (client *Client) PushWorkflow(ctx context.Context, text, sourceName string) (*loomv1.PutWorkflowResponse, error) {
	if text == "" {
		return nil, errors.New("text: required, the compact form as YAML or JSON")
	}
	request := &loomv1.PutWorkflowRequest{Compact: &text}
	if sourceName != "" {
		request.SourceName = &sourceName
	}
	return client.Workflows.PutWorkflow(ctx, request)
}

// ListWorkflows returns the stored workflows.
func (client *Client) ListWorkflows(ctx context.Context) ([]*loomv1.WorkflowSummary, error) {
	listed, err := client.Workflows.ListWorkflows(ctx, &loomv1.ListWorkflowsRequest{})
	if err != nil {
		return nil, err
	}
	return listed.GetWorkflows(), nil
}

// StartWorkflow starts the stored workflow name (its name in the file, or its stored `<name>_<uuid>`).
func (client *Client) StartWorkflow(ctx context.Context, name string) (*loomv1.StartWorkflowResponse, error) {
	return client.Executor.StartWorkflow(ctx, &loomv1.StartWorkflowRequest{Name: name})
}

// StopWorkflow stops the run of name, letting the messages in flight finish.
func (client *Client) StopWorkflow(ctx context.Context, name string) (*loomv1.StopWorkflowResponse, error) {
	return client.Executor.StopWorkflow(ctx, &loomv1.StopWorkflowRequest{Name: name})
}

// Publish hands one message (a JSON object) to the inlet source of a running workflow and returns once loom accepted
// it. A messageID given again is answered Duplicate and not published twice; empty, loom makes one. Numbers travel as
// google.protobuf.Struct numbers, that is doubles.
func (client *Client) Publish(ctx context.Context, workflow, inlet string, body map[string]any, messageID string) (*loomv1.PublishMessageResponse, error) {
	message, err := structpb.NewStruct(body)
	if err != nil {
		return nil, fmt.Errorf("body: not a JSON object: %w", err)
	}
	return client.Executor.PublishMessage(ctx, &loomv1.PublishMessageRequest{WorkflowName: workflow, Inlet: inlet, Body: message, MessageId: messageID})
}

// WatchRun streams the run's events as they happen, its current state first: state changes and component errors
// (durable mode adds each executor's counters). Cancel ctx to end it.
func (client *Client) WatchRun(ctx context.Context, name string) (grpc.ServerStreamingClient[loomv1.WatchRunResponse], error) {
	return client.Executor.WatchRun(ctx, &loomv1.WatchRunRequest{Name: name})
}

// ReadGraph runs a read-only Cypher query as loom (no single sign-on). Set Graph (the embedded graph's AGE graph) or
// Workflow (a stored workflow whose graph database resource to read, Resource naming it when it has several); MaxRows
// 0 means loom's default (1,000), no Timeout loom's (10 s).
func (client *Client) ReadGraph(ctx context.Context, request *loomv1.ReadGraphRequest) (*loomv1.ReadGraphResponse, error) {
	if request.GetQuery() == "" {
		return nil, errors.New("query: required, a Cypher statement")
	}
	if (request.GetGraph() == "") == (request.GetWorkflow() == "") {
		return nil, errors.New("graph, workflow: give exactly one, the embedded graph's name or a stored workflow's")
	}
	return client.Executor.ReadGraph(ctx, request)
}
