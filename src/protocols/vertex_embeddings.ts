/**
 * @module Google's embedding models on Vertex AI through the publisher model's `:predict`: `instances` of
 * `{content, task_type, title}` and `parameters.outputDimensionality`, answered with `predictions[i].embeddings`
 * (`values`, and `statistics.token_count`). gemini-embedding models take one instance a call, the text-embedding
 * models 250.
 */
import { isObject } from "../core/types.ts";
import { tokenCount } from "../core/usage.ts";
import { type EmbeddingShape, vectorsOf } from "./embeddings.ts";

function vertexShape(batch: number): EmbeddingShape {
  return {
    name: "vertex",
    batch,
    tokenInputs: false,
    refusesDimensions: () => undefined,
    read(body, count) {
      const embeddings = Array.isArray(body.predictions)
        ? body.predictions.map((p) => isObject(p) && isObject(p.embeddings) ? p.embeddings : undefined)
        : undefined;
      const vectors = vectorsOf(embeddings, count, (item) => isObject(item) ? item.values : undefined);
      if (!vectors) return undefined;
      let tokens = 0;
      for (const item of embeddings!) {
        const statistics = isObject(item) && isObject(item.statistics) ? item.statistics : undefined;
        if (typeof statistics?.token_count !== "number") return { vectors };
        tokens += tokenCount(statistics.token_count);
      }
      return { vectors, tokens };
    },
  };
}

const ONE_A_CALL = vertexShape(1);
const MANY_A_CALL = vertexShape(250);

/** The shape of an embedding model on Vertex AI by its id. */
export function vertexEmbeddingShape(upstreamModel: string): EmbeddingShape {
  return upstreamModel.startsWith("gemini-embedding") ? ONE_A_CALL : MANY_A_CALL;
}
