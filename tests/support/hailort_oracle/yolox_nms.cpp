// HailoRT's YOLOX NMS post-process op (hailort: libhailort/src/net_flow/ops/yolox_post_process.cpp), the one
// a HEF compiled with nms_postprocess(meta_arch=yolox) runs on the host, driven from the oracle tests
// (tests/backends/test_hailort_oracle_yolox.py). Built and linked as yolov8_nms.cpp is. One frame per request
// on stdin:
//
//   request: "CLASSES MAX_PER_CLASS SCORE_TH IOU_TH IMAGE_H IMAGE_W TYPE NSTRIDES\n", then per stride its three
//            heads, box (reg), objectness (obj) and class (cls), each
//            "H W C PH PW PC ZP SCALE MIN MAX NBYTES\n" + NBYTES bytes (the device frame, NHCW)
//   answer:  "STATUS NBYTES\n" + the HAILO_NMS_BY_CLASS float32 buffer (STATUS: hailo_status, 0 = success)
#include "net_flow/ops/yolox_post_process.hpp"
#include "driver_io.hpp"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

using namespace hailort;
using namespace hailort::net_flow;

int main()
{
    std::ios::sync_with_stdio(false);
    uint32_t classes, max_per_class, type, nstrides;
    double score_th, iou_th;
    float image_h, image_w;
    while (std::cin >> classes >> max_per_class >> score_th >> iou_th >> image_h >> image_w >> type >> nstrides) {
        std::unordered_map<std::string, BufferMetaData> inputs_metadata;
        std::vector<std::vector<uint8_t>> frames(3 * nstrides);
        std::vector<std::string> names;
        YoloxPostProcessConfig yolox_config{};
        yolox_config.image_height = image_h;
        yolox_config.image_width = image_w;
        for (uint32_t i = 0; i < nstrides; i++) {
            const auto stride = std::to_string(i);
            const YoloxMatchingLayersNames layers{"reg" + stride, "obj" + stride, "cls" + stride};
            for (const auto &name : {layers.reg, layers.obj, layers.cls}) {
                inputs_metadata[name] = read_head(static_cast<hailo_format_type_t>(type), frames[names.size()]);
                names.push_back(name);
            }
            yolox_config.input_names.push_back(layers);
        }
        BufferMetaData output{};
        output.format = hailo_format_t{HAILO_FORMAT_TYPE_FLOAT32, HAILO_FORMAT_ORDER_HAILO_NMS_BY_CLASS, HAILO_FORMAT_FLAGS_NONE};
        const NmsPostProcessConfig nms_config(score_th, iou_th, max_per_class, max_per_class * classes, classes);
        std::vector<uint8_t> buffer(classes * (1 + 5 * max_per_class) * sizeof(float), 0);
        auto metadata = YoloxOpMetadata::create(inputs_metadata, {{"nms", output}}, nms_config, yolox_config, "net");
        hailo_status status = metadata.status();
        if (HAILO_SUCCESS == status) {
            auto op = YOLOXPostProcessOp::create(std::static_pointer_cast<YoloxOpMetadata>(metadata.value()));
            status = op.status();
            if (HAILO_SUCCESS == status) {
                std::map<std::string, MemoryView> inputs, outputs{{"nms", MemoryView(buffer.data(), buffer.size())}};
                for (size_t k = 0; k < names.size(); k++) {
                    inputs[names[k]] = MemoryView(frames[k].data(), frames[k].size());
                }
                status = op.value()->execute(inputs, outputs);
            }
        }
        write_answer(status, buffer);
    }
    return 0;
}
