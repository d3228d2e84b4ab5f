package ddb

// The operation table: every operation the endpoint serves, by API and
// name, and the adapters that turn a typed Store method into the
// dispatcher's opFunc.

// The APIs the endpoint serves, as named by the service part of the
// X-Amz-Target header ("<service>.<operation>").
const (
	dynamoAPI  = "DynamoDB_20120810"        // DynamoDB
	streamsAPI = "DynamoDBStreams_20120810" // DynamoDB Streams, on the same endpoint
)

// opFunc runs one operation on a request's body and returns its output,
// which the server encodes as the answer.
type opFunc func(s *Store, body []byte) (any, error)

// op adapts a typed operation to the dispatcher: decode, run.
func op[In any, Out any](f func(*Store, *In) (Out, error)) opFunc {
	return func(s *Store, body []byte) (any, error) {
		in := new(In)
		if err := decodeRequest(body, in); err != nil {
			return nil, err
		}
		return f(s, in)
	}
}

// enveloped answers with f's output as the only member, named field, of an
// object: CreateTable, UpdateTable and DeleteTable answer
// {"TableDescription": ...}, DescribeTable {"Table": ...}.
func enveloped(field string, f opFunc) opFunc {
	return func(s *Store, body []byte) (any, error) {
		out, err := f(s, body)
		if err != nil {
			return nil, err
		}
		return map[string]any{field: out}, nil
	}
}

// operations is the operation table: for each API (dynamoAPI,
// streamsAPI), its operations by name. An operation name appears in one
// API only: the per-operation metrics count operations by name.
//
// DescribeEndpoints answers with the host the request was sent to: the
// server calls describeEndpointsAt with that host in place of this entry,
// which answers for an unknown host.
var operations = map[string]map[string]opFunc{
	dynamoAPI: {
		// Tables (tables.go, tables_update.go).
		"CreateTable":   enveloped("TableDescription", op((*Store).CreateTable)),
		"DescribeTable": enveloped("Table", op((*Store).DescribeTable)),
		"ListTables":    op((*Store).ListTables),
		"DeleteTable":   enveloped("TableDescription", op((*Store).deleteTableWire)),
		"UpdateTable":   enveloped("TableDescription", op((*Store).UpdateTable)),

		// Items (items.go, query.go, batch.go).
		"PutItem":        op((*Store).PutItem),
		"GetItem":        op((*Store).getItemWire),
		"UpdateItem":     op((*Store).UpdateItem),
		"DeleteItem":     op((*Store).DeleteItem),
		"Query":          op((*Store).queryWire),
		"Scan":           op((*Store).scanWire),
		"BatchGetItem":   op((*Store).BatchGetItem),
		"BatchWriteItem": op((*Store).BatchWriteItem),

		// Transactions (transact.go).
		"TransactWriteItems": op((*Store).TransactWriteItems),
		"TransactGetItems":   op((*Store).TransactGetItems),

		// PartiQL (partiql.go).
		"ExecuteStatement":      op((*Store).ExecuteStatement),
		"BatchExecuteStatement": op((*Store).BatchExecuteStatement),
		"ExecuteTransaction":    op((*Store).ExecuteTransaction),

		// Time to live (ttl.go).
		"UpdateTimeToLive":   op((*Store).UpdateTimeToLive),
		"DescribeTimeToLive": op((*Store).DescribeTimeToLive),

		// Tags (tags.go).
		"TagResource":        op((*Store).TagResource),
		"UntagResource":      op((*Store).UntagResource),
		"ListTagsOfResource": op((*Store).ListTagsOfResource),

		// On-demand backups (backup.go).
		"CreateBackup":           op((*Store).CreateBackup),
		"DescribeBackup":         op((*Store).DescribeBackup),
		"ListBackups":            op((*Store).ListBackups),
		"DeleteBackup":           op((*Store).DeleteBackup),
		"RestoreTableFromBackup": op((*Store).RestoreTableFromBackup),

		// Point-in-time recovery (pitr.go).
		"UpdateContinuousBackups":   op((*Store).UpdateContinuousBackups),
		"DescribeContinuousBackups": op((*Store).DescribeContinuousBackups),
		"RestoreTableToPointInTime": op((*Store).RestoreTableToPointInTime),

		// Account and endpoint (limits.go, endpoints.go).
		"DescribeLimits":    op((*Store).DescribeLimits),
		"DescribeEndpoints": describeEndpointsAt(""),
	},
	streamsAPI: {
		// Streams (streams.go).
		"ListStreams":      op((*Store).ListStreams),
		"DescribeStream":   op((*Store).DescribeStream),
		"GetShardIterator": op((*Store).GetShardIterator),
		"GetRecords":       op((*Store).GetRecords),
	},
}
