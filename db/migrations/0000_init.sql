CREATE TABLE "events" (
	"position" bigserial PRIMARY KEY NOT NULL,
	"transaction_id" "xid8" DEFAULT pg_current_xact_id() NOT NULL,
	"stream_id" text NOT NULL,
	"stream_version" integer NOT NULL,
	"type" text NOT NULL,
	"schema_version" integer NOT NULL,
	"data" jsonb NOT NULL,
	"metadata" jsonb NOT NULL,
	"recorded_at" timestamp with time zone NOT NULL,
	CONSTRAINT "events_stream_version_unique" UNIQUE("stream_id","stream_version")
);
--> statement-breakpoint
CREATE TABLE "plants" (
	"owner" text NOT NULL,
	"id" bigint NOT NULL,
	"name" text NOT NULL,
	"tag" text,
	"position" bigint NOT NULL,
	CONSTRAINT "plants_owner_id_pk" PRIMARY KEY("owner","id")
);
--> statement-breakpoint
CREATE INDEX "plants_owner_position" ON "plants" USING btree ("owner","position");